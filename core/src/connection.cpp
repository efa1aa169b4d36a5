#include "connection_impl.hpp"

#include <cerrno>
#include <sys/time.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace redcoord {
namespace detail {

reply convert_reply(const redisReply* r) {
    switch (r->type) {
        case REDIS_REPLY_STRING:
            return reply::make_text(reply::kind::string, std::string(r->str, r->len));
        case REDIS_REPLY_STATUS:
            return reply::make_text(reply::kind::status, std::string(r->str, r->len));
        case REDIS_REPLY_ERROR:
            return reply::make_text(reply::kind::error, std::string(r->str, r->len));
        case REDIS_REPLY_INTEGER:
            return reply::make_integer(r->integer);
        case REDIS_REPLY_NIL:
            return reply{};
        case REDIS_REPLY_ARRAY: {
            std::vector<reply> v;
            v.reserve(r->elements);
            for (std::size_t i = 0; i < r->elements; ++i) v.push_back(convert_reply(r->element[i]));
            return reply::make_array(std::move(v));
        }
        default:
            throw protocol_error("unsupported reply type " + std::to_string(r->type));
    }
}

void throw_context_error(const redisContext* ctx, int saved_errno, const std::string& where,
                         std::string_view during) {
    std::string msg = std::string(during) + " " + where + ": ";
    if (!ctx) throw connection_error(msg + "out of memory");
    msg += ctx->errstr;
    switch (ctx->err) {
        case REDIS_ERR_IO:
            if (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK || saved_errno == ETIMEDOUT ||
                saved_errno == EINPROGRESS)
                throw timeout_error(std::string(during) + " " + where + ": timed out");
            throw connection_error(msg);
        case REDIS_ERR_EOF:
            throw connection_error(msg);
        case REDIS_ERR_PROTOCOL:
            throw protocol_error(msg + " (is this a Redis server?)");
        default:
            throw connection_error(msg);
    }
}

connection open_connection(const endpoint& ep, std::chrono::milliseconds connect_timeout) {
    return connection_access::make(std::make_unique<connection::impl>(ep, connect_timeout));
}

}  // namespace detail

namespace {
timeval to_timeval(std::chrono::milliseconds t) {
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(t.count() / 1000);
    tv.tv_usec = static_cast<suseconds_t>((t.count() % 1000) * 1000);
    return tv;
}
}  // namespace

connection::impl::impl(const endpoint& e, std::chrono::milliseconds connect_timeout) : ep(e) {
    if (ep.is_sentinel())
        throw invalid_argument("a connection needs one server; use a connection_pool for " + ep.to_string());
    if (connect_timeout.count() <= 0) throw invalid_argument("connect_timeout must be > 0");
    timeval tv = to_timeval(connect_timeout);
    errno = 0;
    ctx = ep.unix_path.empty() ? redisConnectWithTimeout(ep.host.c_str(), ep.port, tv)
                               : redisConnectUnixWithTimeout(ep.unix_path.c_str(), tv);
    int saved = errno;
    if (!ctx || ctx->err) {
        std::string w = where();
        try {
            detail::throw_context_error(ctx, saved, w, "cannot connect to");
        } catch (...) {
            if (ctx) redisFree(ctx);
            ctx = nullptr;
            throw;
        }
    }
    try {
        if (ep.keepalive && ep.unix_path.empty()) redisEnableKeepAlive(ctx);
        // The handshake shares the connect deadline so a silent peer cannot stall it.
        set_timeout(connect_timeout);
        std::vector<std::vector<std::string>> hs;
        if (!ep.password.empty()) {
            if (ep.user.empty()) hs.push_back({"AUTH", ep.password});
            else hs.push_back({"AUTH", ep.user, ep.password});
        }
        if (ep.db != 0) hs.push_back({"SELECT", std::to_string(ep.db)});
        hs.push_back({"PING"});
        for (auto& cmd : hs) {
            std::vector<std::string_view> v(cmd.begin(), cmd.end());
            append(v);
        }
        for (std::size_t i = 0; i < hs.size(); ++i) {
            reply r = read_reply();
            if (!r.is_error()) continue;
            const std::string& t = r.text();
            const std::string& verb = hs[i][0];
            if (verb == "AUTH" || t.rfind("NOAUTH", 0) == 0 || t.rfind("WRONGPASS", 0) == 0)
                throw auth_error("authentication failed for " + where() + ": " + t);
            if (verb == "SELECT") throw reply_error("cannot select database on " + where() + ": " + t);
            throw reply_error("handshake with " + where() + " failed: " + t);
        }
        set_timeout(ep.command_timeout);
    } catch (...) {
        redisFree(ctx);
        ctx = nullptr;
        throw;
    }
}

connection::impl::~impl() {
    if (ctx) redisFree(ctx);
}

void connection::impl::set_timeout(std::chrono::milliseconds t) {
    if (t == socket_timeout) return;
    // Zero means no timeout for both hiredis and the socket options it sets.
    if (redisSetTimeout(ctx, to_timeval(t)) != REDIS_OK) fail("setting timeout on");
    socket_timeout = t;
}

void connection::impl::append(std::span<const std::string_view> argv) {
    std::vector<const char*> ptrs;
    std::vector<size_t> lens;
    ptrs.reserve(argv.size());
    lens.reserve(argv.size());
    for (auto a : argv) {
        ptrs.push_back(a.data());
        lens.push_back(a.size());
    }
    if (redisAppendCommandArgv(ctx, static_cast<int>(argv.size()), ptrs.data(), lens.data()) != REDIS_OK)
        fail("sending to");
}

std::optional<reply> connection::impl::adopt(void* raw) {
    std::unique_ptr<redisReply, void (*)(void*)> owned(static_cast<redisReply*>(raw), freeReplyObject);
    if (stale_replies > 0) {
        --stale_replies;
        return std::nullopt;
    }
    try {
        reply out = detail::convert_reply(owned.get());
        last_used = std::chrono::steady_clock::now();
        return out;
    } catch (...) {
        poisoned = true;
        throw;
    }
}

reply connection::impl::read_reply() {
    for (;;) {
        void* raw = nullptr;
        errno = 0;
        if (redisGetReply(ctx, &raw) != REDIS_OK || !raw) fail("reading from");
        if (auto r = adopt(raw)) return std::move(*r);
    }
}

void connection::impl::flush() {
    int done = 0;
    while (!done) {
        errno = 0;
        if (redisBufferWrite(ctx, &done) != REDIS_OK) fail("sending to");
    }
}

void connection::impl::read_ready(const std::function<bool(reply&)>& on_reply) {
    errno = 0;
    if (redisBufferRead(ctx) != REDIS_OK) fail("reading from");
    for (;;) {
        void* raw = nullptr;
        if (redisGetReplyFromReader(ctx, &raw) != REDIS_OK) fail("reading from");
        if (!raw) return;
        auto r = adopt(raw);
        if (r && !on_reply(*r)) return;
    }
}

void connection::impl::fail(std::string_view during) {
    int saved = errno;
    poisoned = true;
    detail::throw_context_error(ctx, saved, where(), during);
}

connection::connection(const endpoint& ep) : impl_(std::make_unique<impl>(ep, ep.connect_timeout)) {}
connection::connection(std::unique_ptr<impl> i) noexcept : impl_(std::move(i)) {}
connection::connection(connection&&) noexcept = default;
connection& connection::operator=(connection&&) noexcept = default;
connection::~connection() = default;

reply connection::command(std::span<const std::string_view> argv) {
    return command_for(impl_->ep.command_timeout, argv);
}

reply connection::command(std::initializer_list<std::string_view> argv) {
    return command(std::span<const std::string_view>(argv.begin(), argv.size()));
}

reply connection::command(const std::vector<std::string>& argv) {
    std::vector<std::string_view> v(argv.begin(), argv.end());
    return command(std::span<const std::string_view>(v));
}

reply connection::command_for(std::chrono::milliseconds timeout, std::span<const std::string_view> argv) {
    if (argv.empty()) throw invalid_argument("empty command");
    if (impl_->poisoned) throw connection_error("connection to " + impl_->where() + " is unusable after an earlier failure");
    impl_->set_timeout(timeout);
    impl_->append(argv);
    reply r = impl_->read_reply();
    if (r.is_error()) throw reply_error(r.text());
    return r;
}

std::vector<reply> connection::pipeline(const std::vector<std::vector<std::string>>& commands) {
    if (impl_->poisoned) throw connection_error("connection to " + impl_->where() + " is unusable after an earlier failure");
    impl_->set_timeout(impl_->ep.command_timeout);
    for (auto& cmd : commands) {
        if (cmd.empty()) throw invalid_argument("empty command in pipeline");
        std::vector<std::string_view> v(cmd.begin(), cmd.end());
        impl_->append(v);
    }
    std::vector<reply> out;
    out.reserve(commands.size());
    for (std::size_t i = 0; i < commands.size(); ++i) out.push_back(impl_->read_reply());
    return out;
}

bool connection::poisoned() const noexcept { return impl_->poisoned; }
void connection::poison() noexcept { impl_->poisoned = true; }
const endpoint& connection::where() const noexcept { return impl_->ep; }
std::chrono::steady_clock::time_point connection::last_used() const noexcept { return impl_->last_used; }

}  // namespace redcoord
