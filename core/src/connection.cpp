#include "connection_impl.hpp"
#include "handshake.hpp"

#include "tls_stream.hpp"

#include <redcoord/core/detail/refusal.hpp>

#include <cerrno>
#include <cstdio>
#include <sys/socket.h>
#include <sys/time.h>
#include <system_error>

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
        case REDIS_REPLY_INTEGER: return reply::make_integer(r->integer);
        case REDIS_REPLY_NIL: return reply{};
        case REDIS_REPLY_ARRAY: {
            std::vector<reply> v;
            v.reserve(r->elements);
            for (std::size_t i = 0; i < r->elements; ++i) v.push_back(convert_reply(r->element[i]));
            return reply::make_array(std::move(v));
        }
        default: throw protocol_error("unsupported reply type " + std::to_string(r->type));
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
        case REDIS_ERR_EOF: throw connection_error(msg);
        case REDIS_ERR_PROTOCOL: throw protocol_error(msg + " (is this a Redis server?)");
        default: throw connection_error(msg);
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
    if (ep.is_sentinel() || ep.is_cluster())
        throw invalid_argument("a connection needs one server; use a connection_pool for " +
                               ep.to_string());
    if (connect_timeout.count() <= 0) throw invalid_argument("connect_timeout must be > 0");
    if (ep.tls.enabled && !ep.unix_path.empty())
        throw invalid_argument("TLS is not available on a unix socket");
    // The TCP connect, the TLS handshake and the AUTH/SELECT/PING exchange share one deadline.
    const auto deadline = std::chrono::steady_clock::now() + connect_timeout;
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
        if (ep.tls.enabled)
            tls = std::make_unique<detail::tls_stream>(ctx->fd, ep.tls, ep.host, where(), deadline);
        // The handshake shares the connect deadline so a silent peer cannot stall it.
        set_timeout(std::max(std::chrono::ceil<std::chrono::milliseconds>(
                                 deadline - std::chrono::steady_clock::now()),
                             std::chrono::milliseconds(1)));
        const auto hs = detail::handshake_commands(ep);
        for (auto& cmd : hs) {
            std::vector<std::string_view> v(cmd.begin(), cmd.end());
            append(v);
        }
        try {
            for (std::size_t i = 0; i < hs.size(); ++i) {
                reply r = read_reply();
                if (r.is_error()) detail::throw_handshake_error(hs[i][0], r.text(), where());
            }
        } catch (const tls_error&) {
            throw;
        } catch (const auth_error&) {
            throw;
        } catch (const connection_error& x) {
            // A TLS server drops a client that speaks plaintext at once (an I/O failure, not a
            // refusal such as LOADING, which leaves ctx->err clear).
            if (tls || ctx->err == 0) throw;
            throw connection_error(
                std::string(x.what()) +
                " during the handshake (if the port is a TLS one, use rediss://)");
        }
        set_timeout(ep.command_timeout);
    } catch (...) {
        tls.reset();
        redisFree(ctx);
        ctx = nullptr;
        throw;
    }
}

connection::impl::~impl() {
    tls.reset();  // before the socket it uses is closed
    if (ctx) redisFree(ctx);
}

void connection::impl::set_timeout(std::chrono::milliseconds t) {
    if (t == socket_timeout) return;
    // Zero means no timeout for both hiredis and the socket options it sets.
    if (redisSetTimeout(ctx, to_timeval(t)) != REDIS_OK) fail("setting timeout on");
    socket_timeout = t;
}

namespace {
// Runs `fn(argc, ptrs, lens)` with hiredis's argument arrays; commands are short, so the
// arrays live on the stack unless long.
template <class Fn>
int with_argv(std::span<const std::string_view> argv, Fn&& fn) {
    constexpr std::size_t small = 16;
    const char* ptr_buf[small];
    size_t len_buf[small];
    std::vector<const char*> ptr_vec;
    std::vector<size_t> len_vec;
    const char** ptrs = ptr_buf;
    size_t* lens = len_buf;
    if (argv.size() > small) {
        ptr_vec.resize(argv.size());
        len_vec.resize(argv.size());
        ptrs = ptr_vec.data();
        lens = len_vec.data();
    }
    for (std::size_t i = 0; i < argv.size(); ++i) {
        ptrs[i] = argv[i].data();
        lens[i] = argv[i].size();
    }
    return fn(static_cast<int>(argv.size()), ptrs, lens);
}
}  // namespace

void connection::impl::append(std::span<const std::string_view> argv) {
    const int rc = with_argv(argv, [&](int argc, const char** ptrs, const size_t* lens) {
        return redisAppendCommandArgv(ctx, argc, ptrs, lens);
    });
    if (rc != REDIS_OK) fail("sending to");
    ++commands_sent;
}

void connection::impl::append_formatted(std::string_view resp) {
    if (redisAppendFormattedCommand(ctx, resp.data(), resp.size()) != REDIS_OK) fail("sending to");
    ++commands_sent;
}

void connection::impl::owe_last_reply(std::string eval_on_noscript) noexcept {
    try {
        owed.push_back(owed_reply{commands_sent - 1, std::move(eval_on_noscript)});
    } catch (...) {
        poisoned = true;
    }
}

namespace detail {

formatted_command::formatted_command(std::span<const std::string_view> argv) {
    const int rc = with_argv(argv, [&](int argc, const char** ptrs, const size_t* lens) {
        return redisFormatSdsCommandArgv(&buf_, argc, ptrs, lens);
    });
    if (rc < 0 || !buf_) throw error("cannot encode command (out of memory)");
    len_ = static_cast<std::size_t>(rc);
}

formatted_command::~formatted_command() {
    if (buf_) sdsfree(buf_);
}

namespace {
std::size_t decimal_digits(std::size_t n) noexcept {
    std::size_t d = 1;
    for (; n >= 10; n /= 10) ++d;
    return d;
}
}  // namespace

std::string encode_command(std::span<const std::string_view> argv) {
    // Exactly the encoded size: a pipelined link keeps up to 10,000 of these at once (one per
    // waiter's attempt), where a rounded-up estimate cost a hundred bytes or more each.
    std::size_t size = 3 + decimal_digits(argv.size());
    for (auto a : argv) size += 5 + decimal_digits(a.size()) + a.size();
    std::string out;
    out.reserve(size);
    out.append("*").append(std::to_string(argv.size())).append("\r\n");
    for (auto a : argv)
        out.append("$").append(std::to_string(a.size())).append("\r\n").append(a).append("\r\n");
    return out;
}

}  // namespace detail

bool connection::impl::knows_script(std::string_view sha) const noexcept {
    for (const auto& k : known_scripts)
        if (k == sha) return true;
    return false;
}

void connection::impl::learned_script(const std::string& sha) {
    if (!knows_script(sha)) known_scripts.push_back(sha);
}

void connection::impl::forgot_script(std::string_view sha) noexcept {
    std::erase_if(known_scripts, [&](const std::string& k) { return k == sha; });
}

std::optional<reply> connection::impl::adopt(void* raw) {
    std::unique_ptr<redisReply, void (*)(void*)> owned(static_cast<redisReply*>(raw),
                                                       freeReplyObject);
    // The server's script cache was flushed: nothing learned on this connection holds any more.
    const bool noscript = owned->type == REDIS_REPLY_ERROR &&
                          std::string_view(owned->str, owned->len).rfind("NOSCRIPT", 0) == 0;
    if (noscript) known_scripts.clear();
    const std::uint64_t seq = replies_read++;
    if (!owed.empty() && owed.front().seq == seq) {
        // A cluster node's MOVED (or CLUSTERDOWN) to a command whose sender stopped waiting (a
        // detached fan-out): this reader has not that command to follow it with, but the pool
        // must not keep routing the slot to this node until its next map refresh.
        if (owned->type == REDIS_REPLY_ERROR)
            if (auto f = cluster.lock())
                f->seen(*this,
                        reply::make_text(reply::kind::error, std::string(owned->str, owned->len)));
        skip_owed(noscript);
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

void connection::impl::skip_owed(bool noscript) {
    std::string eval = std::move(owed.front().eval_on_noscript);
    owed.pop_front();
    if (!noscript || eval.empty()) return;
    // The sender never learns that its write did not run, so it runs now, loaded by EVAL,
    // behind what the connection sent after it (other unread sends, this reader's own
    // commands). Its reply is owed in turn, and cannot be NOSCRIPT.
    append_formatted(eval);
    owe_last_reply();
    flush();
}

reply connection::impl::read_reply() {
    for (;;) {
        void* raw = nullptr;
        flush();  // so that redisGetReply, finding nothing to write, only reads
        errno = 0;
        if (tls) {
            if (redisGetReplyFromReader(ctx, &raw) != REDIS_OK) fail("reading from");
            if (!raw) {
                tls_fill(true);
                continue;
            }
        } else if (redisGetReply(ctx, &raw) != REDIS_OK || !raw) {
            fail("reading from");
        }
        if (auto r = adopt(raw)) return std::move(*r);
    }
}

void connection::impl::flush() { send_buffered(true); }

bool connection::impl::send_buffered(bool may_block) {
    // hiredis's own writer uses write(), which raises SIGPIPE once the peer has reset the
    // socket (a second write to a dead server, e.g. after a reply nobody waited for), so the
    // buffer goes out here: with MSG_NOSIGNAL, or through the TLS session's own socket BIO.
    while (ctx->err == 0 && sdslen(ctx->obuf) > 0) {
        errno = 0;
        ssize_t n = 0;
        if (tls) {
            const auto r = tls->write(ctx->obuf, sdslen(ctx->obuf), may_block);
            using st = detail::tls_stream::status;
            if (r.state == st::want_read || r.state == st::want_write) {
                if (!may_block) return false;
                fail_io(REDIS_ERR_IO, EAGAIN, "sending to");  // SO_SNDTIMEO passed
            }
            if (r.state == st::closed || r.sys_errno) {
                if (auto alert = tls->alert_before_close(); !alert.empty())
                    fail_tls("sending to", alert);
                if (r.state == st::closed) fail_io(REDIS_ERR_EOF, 0, "sending to");
                fail_io(REDIS_ERR_IO, r.sys_errno, "sending to");
            }
            if (r.state == st::failed) fail_tls("sending to", r.reason);
            n = static_cast<ssize_t>(r.bytes);
        } else {
            n = ::send(ctx->fd, ctx->obuf, sdslen(ctx->obuf),
                       MSG_NOSIGNAL | (may_block ? 0 : MSG_DONTWAIT));
            if (n < 0) {
                if (errno == EINTR) continue;
                if (!may_block && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
                fail_io(REDIS_ERR_IO, errno, "sending to");
            }
        }
        if (static_cast<std::size_t>(n) == sdslen(ctx->obuf)) {
            sdsfree(ctx->obuf);
            ctx->obuf = sdsempty();
        } else {
            sdsrange(ctx->obuf, static_cast<int>(n), -1);
        }
    }
    if (ctx->err != 0) fail("sending to");
    return true;
}

bool connection::impl::tls_fill(bool block) {
    using st = detail::tls_stream::status;
    char buf[16 * 1024];  // one TLS record at most
    bool fed = false;
    // Until the session holds nothing more: bytes kept inside OpenSSL are invisible to the
    // poll() of the fan-out and the link reactor, which would wait for them forever. Only the
    // first read of a blocking fill waits (up to SO_RCVTIMEO).
    for (;;) {
        errno = 0;
        const auto r = tls->read(buf, sizeof buf, block && !fed);
        if (r.state == st::done) {
            if (redisReaderFeed(ctx->reader, buf, r.bytes) != REDIS_OK) {
                ctx->err = ctx->reader->err;
                std::snprintf(ctx->errstr, sizeof ctx->errstr, "%s", ctx->reader->errstr);
                fail("reading from");
            }
            fed = true;
            if (!tls->has_pending()) return true;
            continue;
        }
        if (r.state == st::closed) fail_io(REDIS_ERR_EOF, 0, "reading from");
        if (r.state == st::failed) {
            if (r.sys_errno) fail_io(REDIS_ERR_IO, r.sys_errno, "reading from");
            fail_tls("reading from", r.reason);
        }
        if (fed || !block) return fed;
        fail_io(REDIS_ERR_IO, EAGAIN, "reading from");  // SO_RCVTIMEO passed
    }
}

void connection::impl::fail_tls(std::string_view during, const std::string& reason) {
    poisoned = true;
    throw tls_error(std::string(during) + " " + where() + ": TLS: " + reason);
}

void connection::impl::read_ready(const std::function<bool(reply&)>& on_reply) {
    if (tls) {
        tls_fill(false);
    } else {
        errno = 0;
        if (redisBufferRead(ctx) != REDIS_OK) fail("reading from");
    }
    dispatch_buffered(on_reply);
}

bool connection::impl::read_if_ready(const std::function<bool(reply&)>& on_reply) {
    if (tls) {
        const bool fed = tls_fill(false);
        dispatch_buffered(on_reply);
        return fed;
    }
    char buf[16 * 1024];  // hiredis reads in chunks of this size too
    ssize_t n;
    do {
        errno = 0;
        n = ::recv(ctx->fd, buf, sizeof buf, MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    if (n == 0) fail_io(REDIS_ERR_EOF, 0, "reading from");
    if (n < 0) fail_io(REDIS_ERR_IO, errno, "reading from");
    if (redisReaderFeed(ctx->reader, buf, static_cast<size_t>(n)) != REDIS_OK) {
        ctx->err = ctx->reader->err;
        std::snprintf(ctx->errstr, sizeof ctx->errstr, "%s", ctx->reader->errstr);
        fail("reading from");
    }
    dispatch_buffered(on_reply);
    return true;
}

void connection::impl::dispatch_buffered(const std::function<bool(reply&)>& on_reply) {
    for (;;) {
        void* raw = nullptr;
        if (redisGetReplyFromReader(ctx, &raw) != REDIS_OK) fail("reading from");
        if (!raw) return;
        auto r = adopt(raw);
        if (r && !on_reply(*r)) return;
    }
}

void connection::impl::fail_io(int kind, int saved_errno, std::string_view during) {
    // Recorded the way hiredis records its own I/O errors, so fail() reports them alike.
    ctx->err = kind;
    const std::string why = kind == REDIS_ERR_EOF ? std::string("Server closed the connection")
                                                  : std::generic_category().message(saved_errno);
    std::snprintf(ctx->errstr, sizeof ctx->errstr, "%s", why.c_str());
    errno = saved_errno;
    fail(during);
}

void connection::impl::fail(std::string_view during) {
    int saved = errno;
    poisoned = true;
    detail::throw_context_error(ctx, saved, where(), during);
}

connection::connection(const endpoint& ep)
    : impl_(std::make_unique<impl>(ep, ep.connect_timeout)) {}
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

namespace {
void track_transaction(connection::impl& c, std::string_view verb, const reply& r) noexcept {
    if (detail::same_command(verb, "MULTI"))
        c.in_multi = !r.is_error();
    else if (detail::same_command(verb, "EXEC") || detail::same_command(verb, "DISCARD"))
        c.in_multi = false;
}
}  // namespace

reply connection::command_for(std::chrono::milliseconds timeout,
                              std::span<const std::string_view> argv) {
    if (argv.empty()) throw invalid_argument("empty command");
    if (impl_->poisoned)
        throw connection_error("connection to " + impl_->where() +
                               " is unusable after an earlier failure");
    impl_->set_timeout(timeout);
    impl_->append(argv);
    reply r = impl_->read_reply();
    if (!impl_->cluster.expired()) track_transaction(*impl_, argv[0], r);
    if (r.is_error()) {
        if (auto f = impl_->cluster.lock())
            if (auto other = f->follow(*impl_, r, timeout, argv)) r = std::move(*other);
        if (r.is_error()) detail::throw_reply_error(r.text(), argv[0]);
    }
    return r;
}

std::vector<reply> connection::pipeline(const std::vector<std::vector<std::string>>& commands) {
    // All checks before the first append: a throw after it would leave commands buffered
    // whose replies the next command on this (unpoisoned) connection would read.
    for (auto& cmd : commands)
        if (cmd.empty()) throw invalid_argument("empty command in pipeline");
    if (impl_->poisoned)
        throw connection_error("connection to " + impl_->where() +
                               " is unusable after an earlier failure");
    impl_->set_timeout(impl_->ep.command_timeout);
    for (auto& cmd : commands) {
        std::vector<std::string_view> v(cmd.begin(), cmd.end());
        impl_->append(v);
    }
    std::vector<reply> out;
    out.reserve(commands.size());
    for (std::size_t i = 0; i < commands.size(); ++i) out.push_back(impl_->read_reply());
    if (auto f = impl_->cluster.lock())
        for (const auto& r : out)
            if (r.is_error()) f->seen(*impl_, r);
    return out;
}

bool connection::poisoned() const noexcept { return impl_->poisoned; }
void connection::poison() noexcept { impl_->poisoned = true; }
const endpoint& connection::where() const noexcept { return impl_->ep; }
std::chrono::steady_clock::time_point connection::last_used() const noexcept {
    return impl_->last_used;
}

}  // namespace redcoord
