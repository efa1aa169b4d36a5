#include <redcoord/core/detail/async_link.hpp>

#include "connection_impl.hpp"
#include "handshake.hpp"
#include "tls_context.hpp"

#include <redcoord/core/detail/error_slot.hpp>
#include <redcoord/core/detail/master_source.hpp>
#include <redcoord/core/detail/timer_service.hpp>

#include <redcoord/core/errors.hpp>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>

#include <hiredis/hiredis.h>
#include <openssl/err.h>

#include <array>
#include <atomic>
#include <deque>
#include <map>

namespace redcoord::detail {

namespace asio = boost::asio;
using clock_type = async_link::clock_type;
using status = node_result::status;

namespace {

struct op {
    // The command in RESP: its own (`wire`) or the caller's (`shared`); dropped once written,
    // since nothing is ever sent twice, so 10,000 commands in flight keep none of it.
    std::string wire;
    std::shared_ptr<const std::string> shared;
    clock_type::time_point deadline;
    async_link::handler h;
    bool done = false;
    bool written = false;
    clock_type::time_point written_at{};
    // A handshake command: its reply is checked here, never handed to a caller.
    std::string handshake_verb;
    std::multimap<clock_type::time_point, std::shared_ptr<op>>::iterator due;
    bool has_due = false;
};

using op_ptr = std::shared_ptr<op>;

struct reader_deleter {
    void operator()(redisReader* r) const noexcept { redisReaderFree(r); }
};

// `e` as the only owner of its message: thrown by move, where make_exception_ptr copies. A
// copy would share the message's reference-counted storage (libstdc++'s runtime_error) with a
// temporary that the loop's thread releases after a caller's thread got the failure and may
// be reading it.
template <class E>
std::exception_ptr sole_exception(E e) {
    try {
        throw std::move(e);
    } catch (...) {
        return std::current_exception();
    }
}

bool is_master_role(const reply& r) {
    return r.is_array() && !r.elements().empty() && r.elements()[0].is_string() &&
           r.elements()[0].text() == "master";
}

// The process's client context for `opts` (tls_context.hpp: loaded once per set of options),
// as an Asio context holding its own reference.
asio::ssl::context asio_tls_context(const tls_options& opts) {
    const auto shared = tls_context_for(opts);
    SSL_CTX_up_ref(shared.get());
    return asio::ssl::context(shared.get());
}

}  // namespace

struct async_link::state : std::enable_shared_from_this<async_link::state> {
    state(asio::io_context& io, const endpoint& e)
        : ep(e), name(e.to_string()), strand(asio::make_strand(io)), sock(strand), resolver(strand),
          timer(strand) {
        // Made here, on the caller's thread: loading a CA bundle reads files, which the event
        // loop's thread must not wait for; a bad file is the caller's typed error at once.
        if (ep.tls.enabled) tls_ctx.emplace(asio_tls_context(ep.tls));
    }

    endpoint ep;
    std::string name;
    asio::strand<asio::io_context::executor_type> strand;
    asio::generic::stream_protocol::socket sock;
    // A Sentinel endpoint: its resolver (the runtime's), which names the master on a tick
    // worker (`resolving`: a question to the sentinels blocks, so never on the loop's thread),
    // the master this connection goes to, and the resolver's master-change notices.
    std::shared_ptr<master_source> source;
    timer_service* timers = nullptr;
    std::unique_ptr<detail::timer> resolving;
    std::atomic<std::uint64_t> resolve_for{0};  // the generation the next resolution serves
    std::optional<host_port> target;
    boost::signals2::scoped_connection moved;
    // TLS (endpoint::tls): the context, and the session over `sock` of the current connection.
    std::optional<asio::ssl::context> tls_ctx;
    using tls_stream_type = asio::ssl::stream<asio::generic::stream_protocol::socket&>;
    // Shared with its pending operations: a dropped session's stream lives until they end.
    std::shared_ptr<tls_stream_type> tls;
    asio::ip::tcp::resolver resolver;
    asio::steady_timer timer;  // the earliest deadline: a command's, or the connect's
    enum class phase {
        idle,
        connecting,
        ready,
        closed
    } at = phase::idle;
    std::uint64_t generation = 0;  // a connect's handlers of an older socket do nothing
    std::deque<op_ptr> queued;     // not written yet
    std::deque<op_ptr> inflight;   // written, replies expected in this order
    std::multimap<clock_type::time_point, op_ptr> dues;
    clock_type::time_point connect_due = clock_type::time_point::max();
    clock_type::time_point armed = clock_type::time_point::max();
    bool writing = false;
    std::size_t handshaking = 0;  // handshake replies still expected
    std::string out;
    static constexpr std::size_t keep_write_capacity = std::size_t{64} * 1024;
    std::array<char, std::size_t{16} * 1024> in{};
    std::unique_ptr<redisReader, reader_deleter> reader;
    std::atomic<std::size_t> pending_replies{0};

    void add(op_ptr o) {
        if (at == phase::closed) {
            finish(o, failed(status::connection_failed, false,
                             connection_error("link to " + name + " is closed")));
            return;
        }
        o->due = dues.emplace(o->deadline, o);
        o->has_due = true;
        queued.push_back(std::move(o));
        rearm();
        if (at == phase::idle) connect();
        if (at == phase::ready) flush();
    }

    // By exception pointer, so the failure keeps its type (auth_error, timeout_error, ...).
    static link_outcome failed(status s, bool sent, const std::exception_ptr& e,
                               const std::string& what) {
        link_outcome out;
        out.result.state = s;
        out.result.error = what;
        out.sent = sent;
        out.failure = e;
        return out;
    }
    template <class E>
    static link_outcome failed(status s, bool sent, E e) {
        const std::string what = e.what();
        return failed(s, sent, sole_exception(std::move(e)), what);
    }

    void finish(const op_ptr& o, link_outcome outcome) {
        if (o->done) return;
        o->done = true;
        if (o->has_due) {
            dues.erase(o->due);
            o->has_due = false;
        }
        if (o->h) {
            auto h = std::move(o->h);
            try {
                h(std::move(outcome));
            } catch (...) {
                // A handler that throws must not take the link down with it.
            }
        }
    }

    void connect() {
        at = phase::connecting;
        const auto gen = ++generation;
        reader.reset(redisReaderCreate());
        connect_due = clock_type::now() + ep.connect_timeout;
        rearm();
        if (source) {
            resolve_for.store(gen);
            try {
                resolving->arm(timers->clock().now());
            } catch (const std::exception& e) {
                broken(connection_error("cannot resolve " + name + ": " + e.what()));
            }
            return;
        }
        dial(ep.host, ep.port, gen);
    }

    // On a tick worker: asks the sentinels for the master (within the connect timeout) and
    // hands the answer to the strand.
    static std::optional<timer_service::time_point> resolve_tick(const std::weak_ptr<state>& weak) {
        auto self = weak.lock();
        if (!self) return std::nullopt;
        const auto gen = self->resolve_for.load();
        try {
            auto m = self->source->master(self->ep.connect_timeout);
            asio::post(self->strand, [self, gen, m] { self->resolved(gen, m); });
        } catch (...) {
            asio::post(self->strand, [self, gen, e = std::current_exception()] {
                if (gen == self->generation && self->at == phase::connecting)
                    self->broken_with(e, message_of(e));
            });
        }
        return std::nullopt;
    }

    void resolved(std::uint64_t gen, const host_port& m) {
        if (gen != generation || at != phase::connecting) return;
        target = m;
        dial(m.host, m.port, gen);
    }

    // A master-change notice (from the resolver's threads): a connection to the old master
    // is dropped, so the next command goes to the new one instead of meeting READONLY.
    void master_moved(const host_port& from) {
        if (at == phase::idle || at == phase::closed || !target || *target != from) return;
        broken(connection_error("the master of " + name + " moved away from " + from.host + ":" +
                                std::to_string(from.port)));
    }

    void dial(const std::string& host, std::uint16_t port, std::uint64_t gen) {
        auto self = shared_from_this();
        if (!ep.unix_path.empty()) {
            sock = asio::generic::stream_protocol::socket(strand);
            sock.async_connect(
                asio::local::stream_protocol::endpoint(ep.unix_path),
                [self, gen](boost::system::error_code ec) { self->connected(gen, ec); });
            return;
        }
        resolver.async_resolve(
            host, std::to_string(port),
            [self, gen](boost::system::error_code ec,
                        const asio::ip::tcp::resolver::results_type& rs) {
                if (gen != self->generation) return;
                if (ec || rs.empty()) {
                    self->broken(connection_error("cannot resolve " + self->name + ": " +
                                                  (ec ? ec.message() : "no address")));
                    return;
                }
                // The first address: loopback and cluster addresses are numeric.
                const asio::ip::tcp::endpoint where = *rs.begin();
                self->sock = asio::generic::stream_protocol::socket(self->strand);
                self->sock.async_connect(
                    asio::generic::stream_protocol::endpoint(where),
                    [self, gen](boost::system::error_code e) { self->connected(gen, e); });
            });
    }

    void connected(std::uint64_t gen, boost::system::error_code ec) {
        if (gen != generation || at != phase::connecting) return;
        if (ec) {
            broken(connection_error("cannot connect to " + name + ": " + ec.message()));
            return;
        }
        if (ep.keepalive && ep.unix_path.empty()) {
            boost::system::error_code ignored;
            sock.set_option(asio::socket_base::keep_alive(true), ignored);
        }
        if (tls_ctx) return secure(gen);
        start_session();
    }

    // The TLS handshake, within the connect deadline (expire() ends it as it ends a connect).
    void secure(std::uint64_t gen) {
        tls = std::make_shared<tls_stream_type>(sock, *tls_ctx);
        try {
            prepare_client_session(tls->native_handle(), ep.tls, target ? target->host : ep.host,
                                   name);
        } catch (const tls_error& e) {
            broken(e);
            return;
        }
        auto self = shared_from_this();
        tls->async_handshake(asio::ssl::stream_base::client,
                             [self, gen, keep = tls](boost::system::error_code ec) {
                                 if (gen != self->generation || self->at != phase::connecting)
                                     return;
                                 if (ec) return self->tls_refused(ec);
                                 self->start_session();
                             });
    }

    void tls_refused(boost::system::error_code ec) {
        const bool closed = ec == asio::error::eof || ec == asio::ssl::error::stream_truncated;
        std::string reason = ec.message();
        if (ec.category() == asio::error::get_ssl_category())
            if (const char* r = ERR_reason_error_string(static_cast<unsigned long>(ec.value())))
                reason = r;
        broken(tls_error(handshake_failure(tls->native_handle(), name, closed, reason)));
    }

    void start_session() {
        // The handshake goes first, pipelined with the commands queued meanwhile: a refusal
        // fails them all before any reaches a script.
        auto hs = handshake_commands(ep);
        // Behind a Sentinel: the server must still be the master (a failover may have turned
        // the address the sentinels named into a replica since).
        if (source) hs.push_back({"ROLE"});
        for (auto it = hs.rbegin(); it != hs.rend(); ++it) {
            auto o = std::make_shared<op>();
            std::vector<std::string_view> v(it->begin(), it->end());
            o->wire = encode_command(v);
            o->deadline = connect_due;
            o->handshake_verb = (*it)[0];
            queued.push_front(std::move(o));
            ++handshaking;
        }
        at = phase::ready;
        read();
        flush();
    }

    void flush() {
        if (writing || at != phase::ready) return;
        // A burst (10,000 waiters' scripts at once) grows the buffer to megabytes; keeping that
        // capacity for the link's life would cost every later quiet moment the burst's memory.
        if (out.capacity() > keep_write_capacity)
            std::string().swap(out);
        else
            out.clear();
        const auto now = clock_type::now();
        while (!queued.empty()) {
            // Nothing runs behind an unanswered handshake: after a refused SELECT it would run
            // on the wrong database.
            if (handshaking > 0 && queued.front()->handshake_verb.empty()) break;
            // One write carries at most about keep_write_capacity: a burst's commands wait in
            // their own strings instead of being copied into megabytes of buffer all at once.
            if (out.size() >= keep_write_capacity) break;
            auto o = std::move(queued.front());
            queued.pop_front();
            if (o->done) continue;  // given up before it was written: never sent
            out += o->shared ? *o->shared : o->wire;
            o->shared.reset();
            std::string().swap(o->wire);
            o->written = true;
            o->written_at = now;
            inflight.push_back(std::move(o));
        }
        pending_replies.store(inflight.size(), std::memory_order_relaxed);
        if (out.empty()) return;
        rearm();  // the oldest unanswered command may be a new one: its stall deadline
        writing = true;
        auto self = shared_from_this();
        const auto gen = generation;
        auto wrote = [self, gen, keep = tls](boost::system::error_code ec, std::size_t) {
            if (gen != self->generation) return;
            self->writing = false;
            if (ec) {
                self->broken(
                    connection_error("write to " + self->name + " failed: " + ec.message()));
                return;
            }
            self->flush();
        };
        if (tls)
            asio::async_write(*tls, asio::buffer(out), std::move(wrote));
        else
            asio::async_write(sock, asio::buffer(out), std::move(wrote));
    }

    void read() {
        auto self = shared_from_this();
        const auto gen = generation;
        auto got = [self, gen, keep = tls](boost::system::error_code ec, std::size_t n) {
            if (gen != self->generation) return;
            if (ec) {
                self->broken(connection_error(
                    (ec == asio::error::eof ? "connection closed by " : "read from ") + self->name +
                    (ec == asio::error::eof ? "" : " failed: " + ec.message())));
                return;
            }
            if (!self->parse(n)) return;
            self->read();
        };
        if (tls)
            tls->async_read_some(asio::buffer(in), std::move(got));
        else
            sock.async_read_some(asio::buffer(in), std::move(got));
    }

    // Feeds `n` bytes to the reader and hands out every complete reply; false when the link
    // broke on the way.
    bool parse(std::size_t n) {
        if (redisReaderFeed(reader.get(), in.data(), n) != REDIS_OK) {
            broken(protocol_error("unreadable reply from " + name));
            return false;
        }
        const auto gen = generation;
        for (;;) {
            void* raw = nullptr;
            if (redisReaderGetReply(reader.get(), &raw) != REDIS_OK) {
                broken(protocol_error("unreadable reply from " + name + ": " + reader->errstr));
                return false;
            }
            if (!raw) return true;
            std::unique_ptr<redisReply, void (*)(void*)> owned(static_cast<redisReply*>(raw),
                                                               freeReplyObject);
            if (inflight.empty()) {
                broken(protocol_error("a reply nobody asked for from " + name));
                return false;
            }
            auto o = std::move(inflight.front());
            inflight.pop_front();
            pending_replies.store(inflight.size(), std::memory_order_relaxed);
            reply r = convert_reply(owned.get());
            if (!o->handshake_verb.empty()) {
                if (r.is_error()) {
                    try {
                        throw_handshake_error(o->handshake_verb, r.text(), name);
                    } catch (const error& e) {
                        broken_with(std::current_exception(), e.what());
                        return false;
                    }
                }
                if (o->handshake_verb == "ROLE" && !is_master_role(r)) {
                    if (target) source->report_failure(*target);
                    broken(connection_error(name + ": the server the sentinels named is not the "
                                                   "master (a failover under way?)"));
                    return false;
                }
                if (--handshaking == 0) {
                    connect_due = clock_type::time_point::max();
                    rearm();
                    flush();
                }
                continue;
            }
            // A master turned replica answers writes with READONLY: this one is answered as
            // it came, and the link goes, so the next commands reach the new master.
            const bool demoted = source && r.is_error() && r.text().rfind("READONLY", 0) == 0;
            link_outcome outcome;
            outcome.result.state = status::answered;
            outcome.result.value = std::move(r);
            outcome.sent = true;
            finish(o, std::move(outcome));
            if (gen != generation) return false;  // the handler closed the link
            if (demoted) {
                if (target) source->report_failure(*target);
                broken(connection_error(name + ": the master became a replica (READONLY)"));
                return false;
            }
        }
    }

    // Fails every command, written ones as sent (their effect is unknown), and drops the
    // socket; the next command connects again.
    template <class E>
    void broken(E why) {
        const std::string what = why.what();
        broken_with(sole_exception(std::move(why)), what);
    }
    void broken_with(const std::exception_ptr& why, const std::string& what) {
        // A Sentinel endpoint's next connect asks the sentinels again when this master failed.
        if (source && target && at != phase::closed) source->report_failure(*target);
        target.reset();
        ++generation;
        boost::system::error_code ignored;
        resolver.cancel();
        sock.close(ignored);
        // Its pending operations end with the socket, see an old generation and let go of the
        // stream; a TLS session is not shut down politely: the link is being dropped.
        tls.reset();
        writing = false;
        handshaking = 0;
        if (at != phase::closed) at = phase::idle;
        connect_due = clock_type::time_point::max();
        auto in_flight = std::exchange(inflight, {});
        auto waiting = std::exchange(queued, {});
        pending_replies.store(0, std::memory_order_relaxed);
        for (auto& o : in_flight) finish(o, failed(status::connection_failed, true, why, what));
        for (auto& o : waiting) finish(o, failed(status::connection_failed, false, why, what));
        rearm();
    }

    // When the oldest unanswered command has waited command_timeout: the server stalls.
    [[nodiscard]] clock_type::time_point stall_due() const {
        if (inflight.empty() || ep.command_timeout.count() <= 0 || handshaking > 0)
            return clock_type::time_point::max();
        return inflight.front()->written_at + ep.command_timeout;
    }

    void rearm() {
        auto next = std::min(connect_due, stall_due());
        if (!dues.empty()) next = std::min(next, dues.begin()->first);
        if (next == armed) return;
        armed = next;
        if (next == clock_type::time_point::max()) {
            timer.cancel();
            return;
        }
        timer.expires_at(next);
        auto self = shared_from_this();
        timer.async_wait([self](boost::system::error_code ec) {
            if (ec == asio::error::operation_aborted) return;
            self->armed = clock_type::time_point::max();
            self->expire();
        });
    }

    void expire() {
        const auto now = clock_type::now();
        if ((at == phase::connecting || handshaking > 0) && now >= connect_due) {
            if (at == phase::connecting && tls)
                broken(timeout_error("TLS handshake with " + name +
                                     ": timed out (is the port a plaintext one? then use "
                                     "redis://)"));
            else
                broken(timeout_error("connect to " + name + " timed out"));
            return;
        }
        const bool stalled = now >= stall_due();
        while (!dues.empty() && dues.begin()->first <= now) {
            auto o = dues.begin()->second;
            finish(o, failed(status::timeout, o->written,
                             timeout_error("no reply from " + name + " within the deadline")));
        }
        if (stalled) {
            broken(timeout_error("no reply from " + name + " within its command_timeout"));
            return;
        }
        rearm();
    }
};

async_link::async_link(asio::io_context& io, const endpoint& ep)
    : s_(std::make_shared<state>(io, ep)) {}

std::shared_ptr<async_link> async_link::create(asio::io_context& io, const endpoint& ep,
                                               std::shared_ptr<master_source> source,
                                               timer_service* timers) {
    require_event_loop_endpoint(ep, "the event loop's link");
    if (ep.is_sentinel() && (!source || !timers))
        throw invalid_argument("the event loop's link to " + ep.to_string() +
                               " needs the Sentinel resolver and timers of its runtime");
    auto link = std::shared_ptr<async_link>(new async_link(io, ep));
    if (ep.is_sentinel()) {
        auto& s = *link->s_;
        s.source = std::move(source);
        s.timers = timers;
        std::weak_ptr<state> weak = link->s_;
        s.resolving =
            std::make_unique<detail::timer>(*timers, [weak] { return state::resolve_tick(weak); });
        s.moved = s.source->on_master_changed([weak](const host_port& from, const host_port&) {
            if (auto self = weak.lock())
                asio::post(self->strand, [self, from] { self->master_moved(from); });
        });
    }
    return link;
}

async_link::~async_link() {
    try {
        close();
    } catch (...) {
        // Nothing could be queued to close it: its pending commands end with the io_context.
    }
}

void require_event_loop_endpoint(const endpoint& ep, std::string_view what) {
    if (ep.is_cluster())
        throw invalid_argument(std::string(what) +
                               " reaches one server (directly, over TCP or TLS or a unix "
                               "socket, or the master a Sentinel names); not a Cluster "
                               "endpoint: " +
                               ep.to_string());
}

namespace {

// Hands a made command to the link's strand, where it is queued, written and timed.
void submit(const std::shared_ptr<async_link::state>& s, std::shared_ptr<op> o,
            clock_type::time_point deadline, async_link::handler h) {
    o->deadline = deadline;
    o->h = std::move(h);
    asio::dispatch(s->strand, [s, o = std::move(o)]() mutable { s->add(std::move(o)); });
}

}  // namespace

void async_link::exec(std::vector<std::string> argv, clock_type::time_point deadline, handler h) {
    auto o = std::make_shared<op>();
    std::vector<std::string_view> v(argv.begin(), argv.end());
    o->wire = encode_command(v);
    submit(s_, std::move(o), deadline, std::move(h));
}

void async_link::exec_encoded(std::shared_ptr<const std::string> wire,
                              clock_type::time_point deadline, handler h) {
    auto o = std::make_shared<op>();
    o->shared = std::move(wire);
    submit(s_, std::move(o), deadline, std::move(h));
}

void async_link::close() {
    asio::dispatch(s_->strand, [s = s_] {
        s->at = state::phase::closed;
        s->broken(connection_error("link to " + s->name + " closed"));
    });
}

const std::string& async_link::where() const noexcept { return s_->name; }

std::size_t async_link::in_flight() const noexcept {
    return s_->pending_replies.load(std::memory_order_relaxed);
}

}  // namespace redcoord::detail
