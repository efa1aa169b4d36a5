#include <redcoord/core/detail/refusal.hpp>
#include <redcoord/core/holder_label.hpp>
#include <redcoord/queue/reliable_queue.hpp>

#include <redcoord/core/deadline.hpp>
#include <redcoord/core/detail/bytes.hpp>
#include <redcoord/core/detail/observe.hpp>
#include <redcoord/core/detail/thread_annotations.hpp>
#include <redcoord/core/detail/timer_service.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/core/token.hpp>

#include "consumer_lease.hpp"
#include "payload_checks.hpp"
#include "queue_keys.hpp"
#include "reliable_queue_impl.hpp"
#include "reliable_scripts.hpp"
#include "seconds_arg.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <exception>
#include <mutex>
#include <thread>

namespace redcoord {
namespace {

using std::chrono::milliseconds;

std::string be64(std::uint64_t v) { return detail::be_bytes<8>(v); }

std::string now_arg() {
    auto ms = std::chrono::duration_cast<milliseconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
    return be64(static_cast<std::uint64_t>(ms));
}

std::uint64_t fnv1a(std::string_view s) {
    std::uint64_t h = 1469598103934665603ULL;
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
    return h;
}

message to_message(std::string_view element) {
    message m;
    if (auto e = decode_envelope(element)) {
        m.id = to_hex(e->id);
        m.payload = std::move(e->payload);
        m.attempts = e->attempts;
        m.enqueued_at = e->enqueued_at;
    } else {
        char buf[24];
        std::snprintf(buf, sizeof buf, "raw-%016llx",
                      static_cast<unsigned long long>(fnv1a(element)));
        m.id = buf;
        m.payload.assign(element);
        m.raw = true;
    }
    return m;
}

// True when the renewal transaction pipelined before a move went through: MULTI, both
// queued commands and EXEC (replies[first..first + 3]), with no error inside EXEC's reply.
bool transaction_renewed(const std::vector<reply>& replies, std::size_t first = 0) {
    for (std::size_t i = first; i < first + 4; ++i)
        if (replies[i].is_error()) return false;
    if (!replies[first + 3].is_array()) return false;
    for (const auto& x : replies[first + 3].elements())
        if (x.is_error()) return false;
    return true;
}

// The lease renewal as a transaction, for a pipeline: MULTI, SADD, SET PX, EXEC.
void append_renewal(std::vector<std::vector<std::string>>& cmds, const std::string& consumers,
                    const std::string& id, const std::string& heartbeat,
                    const std::string& ttl_ms) {
    cmds.push_back({"MULTI"});
    cmds.push_back({"SADD", consumers, id});
    cmds.push_back({"SET", heartbeat, "1", "PX", ttl_ms});
    cmds.push_back({"EXEC"});
}

void validate(const reliable_queue_options& o) {
    if (o.visibility_timeout < milliseconds(100))
        throw invalid_argument("reliable_queue: visibility_timeout must be >= 100 ms");
    if (o.heartbeat_interval <= milliseconds(0) || o.heartbeat_interval * 2 > o.visibility_timeout)
        throw invalid_argument(
            "reliable_queue: heartbeat_interval must be > 0 and <= visibility_timeout / 2");
    if (o.recover_interval < milliseconds(0))
        throw invalid_argument("reliable_queue: recover_interval must be >= 0");
    if (o.max_attempts < 1) throw invalid_argument("reliable_queue: max_attempts must be >= 1");
    if (o.replication.replicas > 0 && o.replication.timeout <= milliseconds(0))
        throw invalid_argument(
            "reliable_queue: replication.timeout must be > 0 when replication.replicas > 0");
    if (o.async_pop_recheck <= milliseconds(0))
        throw invalid_argument("reliable_queue: async_pop_recheck must be > 0");
    if (!o.consumer_id.empty()) validate_name(o.consumer_id, "consumer id");
    detail::validate_max_payload(o.max_payload, "reliable_queue");
}

// A retired identity's id. The suffix is random, not a counter, so a restarted process
// with the same consumer_id never adopts an unexpired list its predecessor retired.
std::string retired_id(const std::string& consumer_id) {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(random_u64()));
    return consumer_id + "~" + buf;
}

std::string nonce_arg() { return be64(random_u64()); }

}  // namespace

using clock_type = std::chrono::steady_clock;

reliable_queue::impl::impl(connection_pool& p, std::string_view n, reliable_queue_options o)
    : pool(p), opts(std::move(o)), name(n),
      lease({opts.visibility_timeout, opts.heartbeat_interval, opts.recover_interval,
             opts.recover_on_start},
            opts.consumer_id.empty() ? labelled_token(default_holder_label()) : opts.consumer_id,
            [id = opts.consumer_id] {
                return id.empty() ? labelled_token(default_holder_label()) : retired_id(id);
            }),
      rt(p.runtime()) {}

delivery reliable_queue::impl::make_delivery(std::string element, const std::string& id) {
    delivery d;
    static_cast<message&>(d) = to_message(element);
    d.consumer = id;
    d.element = std::move(element);
    return d;
}

reliable_queue::reliable_queue(connection_pool& pool, std::string_view name,
                               reliable_queue_options opts) {
    validate_name(name, "queue name");
    validate(opts);
    impl_ = std::make_unique<impl>(pool, name, std::move(opts));
    auto& m = *impl_;
    auto k = detail::make_queue_keys(m.opts.prefix, name);
    m.ready_key = std::move(k.ready);
    m.dead_key = std::move(k.dead);
    m.consumers_key = std::move(k.consumers);
    m.processing_prefix = std::move(k.processing_prefix);
    m.heartbeat_prefix = std::move(k.heartbeat_prefix);
    m.push_channel = m.ready_key + ":pushed";
    m.ttl_ms = std::to_string(m.opts.visibility_timeout.count());
    m.max_attempts = std::to_string(m.opts.max_attempts);
    auto r = random_u64();
    for (auto& b : m.id_prefix) {
        b = static_cast<std::uint8_t>(r & 0xff);
        r >>= 8;
    }
    // A random start as well: 128 random bits even for a producer that pushes once.
    m.id_counter.store(random_u64());
    m.observe();
}

void reliable_queue::impl::observe() {
    const detail::metrics_scope ms(*rt);
    if (!ms) return;
    const metric_labels l{{"name", ms.name(name)}};
    redeliveries = ms.counter(detail::metric::queue_redeliveries_total, l);
    dead_letters = ms.counter(detail::metric::queue_dead_letters_total, l);
    gauges.start(ms,
                 {{detail::metric::queue_ready, l},
                  {detail::metric::queue_dead, l},
                  {detail::metric::queue_in_flight, l}},
                 [this] {
                     // Bounded by the pool's borrow_timeout and the endpoint's command_timeout.
                     auto c = pool.borrow_for(ready_key);
                     auto r =
                         detail::queue_stats_script().run(*c, {consumers_key, ready_key, dead_key},
                                                          {processing_prefix, heartbeat_prefix});
                     const auto& e = r.elements();
                     std::int64_t in_flight = 0;
                     for (std::size_t i = 2; i + 2 < e.size(); i += 3)
                         in_flight += e[i + 1].integer();
                     return std::vector<double>{static_cast<double>(e.at(0).integer()),
                                                static_cast<double>(e.at(1).integer()),
                                                static_cast<double>(in_flight)};
                 });
}

reliable_queue::~reliable_queue() {
    try {
        close();
    } catch (...) {
        // The heartbeat expires on its own and recover() returns the messages.
    }
}

std::string reliable_queue::consumer_id() const {
    return impl_->locked([](const detail::consumer_lease& l) { return l.current().id; });
}
std::string reliable_queue::processing_key() const { return impl_->processing_key(consumer_id()); }
const std::string& reliable_queue::key() const noexcept { return impl_->ready_key; }
const std::string& reliable_queue::dead_key() const noexcept { return impl_->dead_key; }
const reliable_queue_options& reliable_queue::options() const noexcept { return impl_->opts; }
std::uint64_t reliable_queue::heartbeat_failures() const noexcept {
    return impl_->hb_failures.load();
}
std::uint64_t reliable_queue::settle_retries() const noexcept {
    return impl_->settle_retries.load();
}
std::uint64_t reliable_queue::lease_losses() const noexcept { return impl_->lease_losses.load(); }

std::string reliable_queue::push(std::string_view payload) {
    std::vector<std::string> one{std::string(payload)};
    return push_batch(one).front();
}

std::vector<std::string> reliable_queue::push_batch(std::span<const std::string> payloads) {
    auto& m = *impl_;
    std::vector<std::string> ids;
    if (payloads.empty()) return ids;
    detail::check_payloads(payloads, m.opts.max_payload, "reliable_queue");
    ids.reserve(payloads.size());
    std::vector<std::string> elements;
    elements.reserve(payloads.size());
    const auto now = std::chrono::system_clock::now();
    const auto first = m.id_counter.fetch_add(payloads.size());
    for (std::size_t i = 0; i < payloads.size(); ++i) {
        envelope e;
        std::copy(m.id_prefix.begin(), m.id_prefix.end(), e.id.begin());
        auto n = first + i;
        detail::put_be<8>(e.id.data() + 8, n);
        e.enqueued_at = now;
        e.payload = payloads[i];
        elements.push_back(encode_envelope(e));
        ids.push_back(to_hex(e.id));
    }
    auto c = m.pool.borrow_for(m.ready_key);
    replicated_reply r{};
    try {
        if (m.opts.replication.replicas == 0) {
            // The notice for pending async_pops goes in the same write: no extra round trip.
            std::vector<std::vector<std::string>> cmds(2);
            cmds[0].reserve(elements.size() + 2);
            cmds[0].emplace_back("LPUSH");
            cmds[0].push_back(m.ready_key);
            for (auto& el : elements) cmds[0].push_back(std::move(el));
            cmds[1] = {"PUBLISH", m.push_channel, ""};
            const auto replies = c->pipeline(cmds);
            if (replies.front().is_error())
                detail::throw_reply_error(replies.front().text(), "LPUSH");
            // A refused notice is not a failed push (the message is in): pops re-check.
            return ids;
        }
        std::vector<std::string_view> argv;
        argv.reserve(elements.size() + 2);
        argv.emplace_back("LPUSH");
        argv.emplace_back(m.ready_key);
        for (const auto& el : elements) argv.push_back(el);
        r = command_then_wait(*c, argv, m.opts.replication.replicas, m.opts.replication.timeout);
        try {
            (void)c->pipeline({{"PUBLISH", m.push_channel, ""}});  // error replies: ignored
        } catch (const error&) {
            // Not a failed push either: the message is in (and the connection is poisoned).
        }
    } catch (const reply_error& e) {
        detail::poison_if_desynchronised(*c, e);
        throw;
    }
    if (r.acks < m.opts.replication.replicas)
        throw replication_timeout(
            "reliable_queue: push to '" + m.ready_key + "' acknowledged by " +
                std::to_string(r.acks) + " of " + std::to_string(m.opts.replication.replicas) +
                " replicas within " + std::to_string(m.opts.replication.timeout.count()) +
                " ms (the master has it; not yet durable)",
            r.acks, m.opts.replication.replicas);
    return ids;
}

void reliable_queue::impl::release(connection& c, const std::string& id) {
    const std::string nonce = nonce_arg(), now = now_arg();
    detail::queue_release_script().run(
        c, {consumers_key, ready_key, dead_key, processing_key(id), heartbeat_key(id)},
        {id, max_attempts, nonce, now, push_channel});
}

detail::release_waiter& reliable_queue::impl::push_notices() {
    std::lock_guard l(start_mu);
    if (!pushes)
        pushes = std::make_unique<detail::release_waiter>(rt, std::vector<endpoint>{pool.where()},
                                                          push_channel);
    return *pushes;
}

std::shared_ptr<detail::pop_recheck> reliable_queue::impl::pop_rechecks() {
    std::lock_guard l(start_mu);
    if (!rechecks)
        rechecks = std::make_shared<detail::pop_recheck>(
            rt->io(), ready_key, opts.async_pop_recheck, pool.where().command_timeout);
    return rechecks;
}

void reliable_queue::impl::start_consumer() {
    if (started.load(std::memory_order_acquire)) return;
    // Concurrent first pops must not each run the start-up release: a late one would return
    // a message another thread has just popped.
    std::lock_guard start(start_mu);
    if (started.load()) return;
    {
        // A processing list under our id already (a previous process with this consumer id
        // died less than a lease ago) holds nothing this object handed out: return it now
        // rather than adopting it silently, then register.
        const auto me = locked([](detail::consumer_lease& l) { return l.starting(); });
        auto c = pool.borrow_for(ready_key);
        release(*c, me.id);
        heartbeat(*c, me.who, me.id);
    }
    if (opts.recover_on_start) (void)recover();
    const auto due = locked([this](detail::consumer_lease& l) {
        l.started(now());
        return l.next_due();
    });
    upkeep = std::make_unique<detail::timer>(rt->timers(), [this] { return upkeep_tick(); });
    if (due) upkeep->arm(*due);
    started.store(true, std::memory_order_release);
}

void reliable_queue::impl::heartbeat(connection& c, lease_ref who, const std::string& id) {
    const auto sent = now();
    const auto r =
        detail::queue_register_script().run(c, {consumers_key, heartbeat_key(id)}, {id, ttl_ms});
    const auto& e = r.elements();
    const bool intact = e.at(0).integer() == 0 && e.at(1).integer() == 1;
    // The server dropped the lease before the bound we computed (volatile-* eviction, a clock
    // step, a manual DEL): the engine stops trusting its bound for plain moves.
    if (locked([&](detail::consumer_lease& l) { return l.renewed(who, sent, intact); }))
        lease_losses.fetch_add(1);
}

void reliable_queue::impl::register_after_move(connection& c, lease_ref who,
                                               const std::string& id) noexcept {
    try {
        heartbeat(c, who, id);
    } catch (const std::exception&) {
        // The move happened, so the delivery is returned all the same (dropping it would
        // strand the message); the upkeep keeps renewing, and if this consumer dies first,
        // recovery returns the message as long as it is registered.
    }
}

// One run of the upkeep on the runtime's timer thread: the heartbeats and recovery the
// engine says are due. Each command is bounded by the endpoint's timeouts.
std::optional<clock_type::time_point> reliable_queue::impl::upkeep_tick() {
    const auto work = locked([this](detail::consumer_lease& l) { return l.tick(now()); });
    try {
        if (!work.renew.empty()) {
            auto c = pool.borrow_for(ready_key);
            for (const auto& who : work.renew) heartbeat(*c, who.who, who.id);
        }
        if (work.recover) (void)recover();
    } catch (const std::exception&) {
        // Server unreachable: the lease may lapse and others recover our messages;
        // our acks then report false. Keep trying.
        hb_failures.fetch_add(1);
    }
    return locked([](detail::consumer_lease& l) { return l.next_due(); });
}

std::optional<delivery> reliable_queue::pop(milliseconds timeout) {
    return pop(timeout, std::stop_token{});
}

std::optional<delivery> reliable_queue::pop(milliseconds timeout, std::stop_token stop) {
    auto& m = *impl_;
    m.start_consumer();
    auto t = m.locked([&](detail::consumer_lease& l) { return l.begin_pop(m.now(), timeout); });
    auto end = [&](detail::pop_end how) {
        m.locked([&](detail::consumer_lease& l) { l.end_pop(t, how); });
    };
    try {
        auto d = m.pop_as(t, stop);
        end(d ? detail::pop_end::delivered : detail::pop_end::empty);
        return d;
    } catch (const reply_error&) {
        end(detail::pop_end::refused);  // the server refused the command: nothing moved
        throw;
    } catch (const error&) {
        end(detail::pop_end::transport_error);  // a move may have happened without its reply
        throw;
    }
}

std::optional<delivery> reliable_queue::impl::pop_as(detail::consumer_lease::pop_ticket& t,
                                                     const std::stop_token& stop) {
    auto c = pool.borrow_for(ready_key);
    const auto cmd_timeout = c->where().command_timeout;
    const std::string pkey = processing_key(t.id), hkey = heartbeat_key(t.id);
    for (;;) {
        const auto plan = locked([&](detail::consumer_lease& l) {
            return l.plan_move(t, now(), stop.stop_requested(), cmd_timeout);
        });
        if (plan.kind == detail::move_kind::none) return std::nullopt;
        const auto sent = now();
        reply r;
        bool renewal_ok = true;
        if (plan.kind == detail::move_kind::plain) {
            if (plan.block == milliseconds(0)) {
                r = c->command({"LMOVE", ready_key, pkey, "RIGHT", "LEFT"});
            } else {
                const std::string secs = detail::seconds_arg(plan.block);
                const std::string_view argv[] = {"BLMOVE", ready_key, pkey, "RIGHT", "LEFT", secs};
                r = c->command_for(plan.reply_deadline, argv);
            }
        } else if (plan.block == milliseconds(0)) {
            // Lease short or unknown: renew and move in one script.
            r = detail::queue_pop_script().run(*c, {consumers_key, hkey, ready_key, pkey},
                                               {t.id, ttl_ms});
        } else {
            // Renew in a transaction pipelined right before the BLMOVE (one round trip), so
            // the lease outlives the block whatever the client does meanwhile.
            std::vector<std::vector<std::string>> cmds;
            append_renewal(cmds, consumers_key, t.id, hkey, ttl_ms);
            cmds.push_back(
                {"BLMOVE", ready_key, pkey, "RIGHT", "LEFT", detail::seconds_arg(plan.block)});
            auto replies = c->pipeline(cmds);
            // The BLMOVE runs whatever became of the transaction: look at its reply first, and
            // never drop a message it moved.
            r = std::move(replies[4]);
            renewal_ok = transaction_renewed(replies);
            if (!renewal_ok && (r.is_nil() || r.is_error())) {
                for (std::size_t i = 0; i < replies.size(); ++i)
                    if (replies[i].is_error())
                        detail::throw_reply_error(replies[i].text(), cmds[i][0]);
                throw protocol_error("reliable_queue: lease renewal transaction aborted");
            }
        }
        const bool moved = !r.is_nil() && !r.is_error();
        const bool renew_now = locked([&](detail::consumer_lease& l) {
            return l.moved(t, plan.kind, sent, now(), renewal_ok, moved);
        });
        if (renew_now) register_after_move(*c, t.who, t.id);
        if (r.is_error()) detail::throw_reply_error(r.text(), "BLMOVE");
        if (moved) {
            delivery d;
            static_cast<message&>(d) = to_message(r.text());
            d.consumer = t.id;
            d.element = r.text();
            return d;
        }
    }
}

template <class F>
auto reliable_queue::impl::settling(const delivery& d, F&& f) {
    auto t = locked([&](detail::consumer_lease& l) { return l.begin_settle(d.consumer, now()); });
    auto step = [&](detail::settle_attempt what) {
        return locked([&](detail::consumer_lease& l) { return l.settle(t, what, now()); });
    };
    for (;;) {
        // Failures before the command was sent (no connection, a refused handshake) and
        // error replies both leave the server unchanged: the message is still ours to settle.
        std::exception_ptr unchanged;
        bool sent = false, for_good = false;
        try {
            auto c = pool.borrow_for(ready_key);
            sent = true;
            try {
                auto r = f(*c);
                step(detail::settle_attempt::replied);
                return r;
            } catch (const reply_error& e) {
                detail::poison_if_desynchronised(*c, e);
                throw;
            }
        } catch (const permission_error&) {
            // The ACL user lacks the command: retrying cannot cure that.
            unchanged = std::current_exception();
            for_good = true;
        } catch (const reply_error&) {
            unchanged = std::current_exception();
        } catch (const error& e) {
            if (!sent) {
                unchanged = std::current_exception();
            } else {
                // Sent, reply lost: whether it was removed is unknown. If it is still there,
                // the retired identity's lease runs out and recovery returns it.
                step(detail::settle_attempt::reply_lost);
                throw outcome_unknown(std::string("reliable_queue: ack/nack sent, reply lost (") +
                                      e.what() +
                                      "); the message may still be in flight and come back");
            }
        }
        // Refused (BUSY, LOADING, READONLY, OOM, NOREPLICAS, ...) or not sent: the engine
        // retries while the lease surely holds, then gives the message up to recovery.
        const auto s = step(detail::settle_attempt::refused);
        if (for_good || s.verdict != detail::settle_verdict::retry)
            std::rethrow_exception(unchanged);
        settle_retries.fetch_add(1);
        std::this_thread::sleep_for(s.wait);
    }
}

bool reliable_queue::ack(const delivery& d) {
    auto& m = *impl_;
    const std::string pkey = m.processing_key(d.consumer);
    return m.settling(d, [&](connection& c) {
        return c.command({"LREM", pkey, "1", d.element}).integer() == 1;
    });
}

ack_and_pop_result reliable_queue::ack_and_pop(const delivery& done) {
    auto& m = *impl_;
    m.start_consumer();
    using detail::consumer_lease;
    const auto begun = m.now();
    // Both engines see what they would see for an ack() and a try_pop() sent separately: the
    // pop's ticket counts the next delivery as outstanding before the move, and the settle
    // ticket releases `done` once the reply says what became of it.
    auto st = m.locked([&](consumer_lease& l) { return l.begin_settle(done.consumer, begun); });
    auto t = m.locked([&](consumer_lease& l) { return l.begin_pop(begun, milliseconds(0)); });
    auto end = [&](detail::pop_end how) {
        m.locked([&](consumer_lease& l) { l.end_pop(t, how); });
    };
    pooled_connection c;
    try {
        c = m.pool.borrow_for(m.ready_key);
    } catch (const error&) {
        // Nothing sent: the ack alone goes the way of ack() (retried while the lease holds).
        end(detail::pop_end::empty);
        return {ack(done), std::nullopt};
    }
    const auto plan = m.locked([&](consumer_lease& l) {
        return l.plan_move(t, m.now(), false, c->where().command_timeout);
    });
    const bool renew = plan.kind == detail::move_kind::renew_then_move;
    // Plain commands in one write, not a script: the ack and the move need no atomicity
    // between them, and a script's redis.call costs the server several times the command.
    std::vector<std::vector<std::string>> cmds{
        {"LREM", m.processing_key(done.consumer), "1", done.element}};
    if (renew) append_renewal(cmds, m.consumers_key, t.id, m.heartbeat_key(t.id), m.ttl_ms);
    cmds.push_back({"LMOVE", m.ready_key, m.processing_key(t.id), "RIGHT", "LEFT"});
    const auto sent = m.now();
    std::vector<reply> replies;
    try {
        replies = c->pipeline(cmds);
    } catch (const error& e) {
        c = pooled_connection();
        // Sent, replies lost: both the removal and a move are unknown. Each engine retires
        // the identity it concerns, so whatever is still in a list comes back by recovery.
        m.locked([&](consumer_lease& l) {
            (void)l.settle(st, detail::settle_attempt::reply_lost, m.now());
        });
        end(detail::pop_end::transport_error);
        throw outcome_unknown(std::string("reliable_queue: ack and pop sent, reply lost (") +
                              e.what() + "); the message may still be in flight and come back");
    }
    const reply& removed = replies.front();
    const reply& r = replies.back();
    const bool moved = !r.is_nil() && !r.is_error();
    const bool renewal_ok = !renew || transaction_renewed(replies, 1);
    const bool renew_now = m.locked(
        [&](consumer_lease& l) { return l.moved(t, plan.kind, sent, m.now(), renewal_ok, moved); });
    if (renew_now) m.register_after_move(*c, t.who, t.id);
    c = pooled_connection();
    // A refused move (READONLY, OOM, no permission, ...) moved nothing: no next message.
    end(moved ? detail::pop_end::delivered
              : (r.is_error() ? detail::pop_end::refused : detail::pop_end::empty));
    ack_and_pop_result out;
    if (removed.is_error()) {
        // The server refused the LREM: nothing was removed. The ack goes on as ack() does
        // (retried while the lease holds, then thrown); a message the move took is kept.
        try {
            out.acked = ack(done);
        } catch (...) {
            if (!moved) throw;
            // The moved message must reach the caller, or it would wait in a live list.
            out.acked = false;
        }
    } else {
        m.locked([&](consumer_lease& l) {
            (void)l.settle(st, detail::settle_attempt::replied, m.now());
        });
        out.acked = removed.integer() == 1;
    }
    if (moved) {
        delivery d;
        static_cast<message&>(d) = to_message(r.text());
        d.consumer = t.id;
        d.element = r.text();
        out.next = std::move(d);
    }
    return out;
}

bool reliable_queue::nack(const delivery& d, nack_action action) {
    auto& m = *impl_;
    const std::string pkey = m.processing_key(d.consumer);
    return m.settling(d, [&](connection& c) {
        const std::string nonce = nonce_arg(), now = now_arg();
        auto r = detail::queue_nack_script().run(
            c, {pkey, m.ready_key, m.dead_key},
            {d.element, action == nack_action::requeue ? "requeue" : "dead", m.max_attempts, nonce,
             now, m.push_channel});
        if (r.integer() == 1) m.redeliveries.inc();
        if (r.integer() == 2) m.dead_letters.inc();
        return r.integer() != 0;
    });
}

recovery_result reliable_queue::recover() { return impl_->recover(); }

recovery_result reliable_queue::impl::recover() {
    auto c = pool.borrow_for(ready_key);
    const std::string nonce = nonce_arg(), now = now_arg();
    auto r = detail::queue_recover_script().run(
        *c, {consumers_key, ready_key, dead_key},
        {processing_prefix, heartbeat_prefix, max_attempts, nonce, now, push_channel});
    const auto& e = r.elements();
    const recovery_result out{static_cast<std::size_t>(e.at(0).integer()),
                              static_cast<std::size_t>(e.at(1).integer()),
                              static_cast<std::size_t>(e.at(2).integer())};
    redeliveries.inc(static_cast<double>(out.requeued));
    dead_letters.inc(static_cast<double>(out.dead_lettered));
    if (out.requeued + out.dead_lettered + out.consumers > 0)
        rt->emit(log_level::warning, "queue", "recovered the messages of dead consumers",
                 {{"queue", name},
                  {"consumers", std::to_string(out.consumers)},
                  {"requeued", std::to_string(out.requeued)},
                  {"dead_lettered", std::to_string(out.dead_lettered)}});
    return out;
}

std::vector<message> reliable_queue::dead_letters(std::size_t limit) {
    const std::string start = limit == 0 ? "0" : "-" + std::to_string(limit);
    auto r = impl_->pool.command({"LRANGE", impl_->dead_key, start, "-1"});
    std::vector<message> out;
    const auto& e = r.elements();
    out.reserve(e.size());
    // The list grows at the left, so the oldest is at the right end.
    for (auto it = e.rbegin(); it != e.rend(); ++it) out.push_back(to_message(it->text()));
    return out;
}

std::size_t reliable_queue::requeue_dead(std::size_t limit) {
    auto c = impl_->pool.borrow_for(impl_->ready_key);
    auto r = detail::queue_requeue_dead_script().run(*c, {impl_->dead_key, impl_->ready_key},
                                                     {std::to_string(limit), impl_->push_channel});
    return static_cast<std::size_t>(r.integer());
}

reliable_queue_stats reliable_queue::stats() {
    auto& m = *impl_;
    auto c = m.pool.borrow_for(m.ready_key);
    auto r = detail::queue_stats_script().run(*c, {m.consumers_key, m.ready_key, m.dead_key},
                                              {m.processing_prefix, m.heartbeat_prefix});
    const auto& e = r.elements();
    reliable_queue_stats s;
    s.ready = static_cast<std::size_t>(e.at(0).integer());
    s.dead = static_cast<std::size_t>(e.at(1).integer());
    for (std::size_t i = 2; i + 2 < e.size(); i += 3) {
        s.in_flight[e[i].text()] = static_cast<std::size_t>(e[i + 1].integer());
        if (e[i + 2].integer() == 0) s.expired.push_back(e[i].text());
    }
    return s;
}

bool reliable_queue::retire_if_idle() {
    auto& m = *impl_;
    const std::string id = consumer_id();
    auto c = m.pool.borrow_for(m.ready_key);
    return detail::queue_retire_idle_script()
               .run(*c, {m.consumers_key, m.processing_key(id), m.heartbeat_key(id)}, {id})
               .integer() == 1;
}

std::size_t reliable_queue::size() {
    return static_cast<std::size_t>(impl_->pool.command({"LLEN", impl_->ready_key}).integer());
}

void reliable_queue::close() {
    auto& m = *impl_;
    std::lock_guard start(m.start_mu);
    if (!m.started.load()) return;
    m.started.store(false);
    m.upkeep.reset();  // waits for a tick in progress

    // Return what this object holds under its current and any retired identity.
    const auto all = m.locked([](detail::consumer_lease& l) { return l.close(); });
    auto c = m.pool.borrow_for(m.ready_key);
    for (const auto& me : all) m.release(*c, me.id);
}

}  // namespace redcoord
