#include <redcoord/queue/reliable_queue.hpp>

#include <redcoord/core/deadline.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/token.hpp>

#include "payload_checks.hpp"
#include "reliable_scripts.hpp"
#include "seconds_arg.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <thread>

namespace redcoord {
namespace {

using std::chrono::milliseconds;

std::string be64(std::uint64_t v) {
    std::string s(8, '\0');
    for (int i = 7; i >= 0; --i, v >>= 8) s[static_cast<std::size_t>(i)] = static_cast<char>(v & 0xff);
    return s;
}

std::string now_arg() {
    auto ms = std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
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
        std::snprintf(buf, sizeof buf, "raw-%016llx", static_cast<unsigned long long>(fnv1a(element)));
        m.id = buf;
        m.payload.assign(element);
        m.raw = true;
    }
    return m;
}

// Records a renewal sent at `sent`: the server set the key's expiry after that, so the lease
// lasts at least until sent + ttl.
template <class Identity>
void renewed(Identity& who, std::chrono::steady_clock::time_point sent, milliseconds ttl) noexcept {
    const auto until = (sent + ttl).time_since_epoch().count();
    auto cur = who.lease_until.load();
    while (cur < until && !who.lease_until.compare_exchange_weak(cur, until)) {
    }
}

// True when the renewal transaction pipelined before a BLMOVE went through: MULTI, both
// queued commands and EXEC, with no error inside EXEC's reply either.
bool transaction_renewed(const std::vector<reply>& replies) {
    for (std::size_t i = 0; i < 4; ++i)
        if (replies[i].is_error()) return false;
    if (!replies[3].is_array()) return false;
    for (const auto& x : replies[3].elements())
        if (x.is_error()) return false;
    return true;
}

void validate(const reliable_queue_options& o) {
    if (o.visibility_timeout < milliseconds(100))
        throw invalid_argument("reliable_queue: visibility_timeout must be >= 100 ms");
    if (o.heartbeat_interval <= milliseconds(0) || o.heartbeat_interval * 2 > o.visibility_timeout)
        throw invalid_argument("reliable_queue: heartbeat_interval must be > 0 and <= visibility_timeout / 2");
    if (o.recover_interval < milliseconds(0))
        throw invalid_argument("reliable_queue: recover_interval must be >= 0");
    if (o.max_attempts < 1) throw invalid_argument("reliable_queue: max_attempts must be >= 1");
    if (o.replicas > 0 && o.replica_timeout <= milliseconds(0))
        throw invalid_argument("reliable_queue: replica_timeout must be > 0 when replicas > 0");
    if (!o.consumer_id.empty()) validate_name(o.consumer_id, "consumer id");
    detail::validate_max_payload(o.max_payload, "reliable_queue");
}

// A retired identity's id. The suffix is random, not a counter, so a restarted process
// with the same consumer_id never adopts an unexpired list its predecessor retired (Q2).
std::string retired_id(const std::string& consumer_id) {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(random_u64()));
    return consumer_id + "~" + buf;
}

// Back-off between attempts of a refused ack or nack.
constexpr milliseconds first_settle_backoff{10}, max_settle_backoff{500};

}  // namespace

reliable_queue::reliable_queue(connection_pool& pool, std::string_view name, reliable_queue_options opts)
    : pool_(pool), opts_(std::move(opts)), name_(name) {
    validate_name(name, "queue name");
    validate(opts_);
    ready_key_ = make_key(opts_.prefix, "queue", name);
    dead_key_ = make_key(opts_.prefix, "queue", name, "dead");
    consumers_key_ = make_key(opts_.prefix, "queue", name, "consumers");
    processing_prefix_ = make_key(opts_.prefix, "queue", name, "processing:");
    heartbeat_prefix_ = make_key(opts_.prefix, "queue", name, "heartbeat:");
    ident_ = make_identity(opts_.consumer_id.empty() ? random_token() : opts_.consumer_id);
    ttl_ms_ = std::to_string(opts_.visibility_timeout.count());
    max_attempts_ = std::to_string(opts_.max_attempts);
    auto r = random_u64();
    for (auto& b : id_prefix_) {
        b = static_cast<std::uint8_t>(r & 0xff);
        r >>= 8;
    }
    // A random start as well: 128 random bits even for a producer that pushes once (Q6).
    id_counter_.store(random_u64());
}

reliable_queue::~reliable_queue() {
    try {
        close();
    } catch (...) {
        // The heartbeat expires on its own and recover() returns the messages.
    }
}

std::shared_ptr<reliable_queue::identity> reliable_queue::make_identity(std::string id) const {
    auto who = std::make_shared<identity>();
    who->processing_key = processing_prefix_ + id;
    who->heartbeat_key = heartbeat_prefix_ + id;
    who->id = std::move(id);
    return who;
}

std::shared_ptr<reliable_queue::identity> reliable_queue::current() const {
    std::lock_guard lk(ident_mu_);
    return ident_;
}

std::shared_ptr<reliable_queue::identity> reliable_queue::owner_of(const std::string& consumer) const {
    std::lock_guard lk(ident_mu_);
    if (ident_->id == consumer) return ident_;
    for (auto& r : retired_)
        if (r->id == consumer) return r;
    return nullptr;
}

std::vector<std::shared_ptr<reliable_queue::identity>> reliable_queue::to_renew() {
    using clock = std::chrono::steady_clock;
    std::lock_guard lk(ident_mu_);
    // A retired identity is renewed while deliveries it handed out are unsettled (so they
    // are not recovered under their handler's feet); once none are, its lease runs out and
    // recovery returns whatever lost replies left in its list. Long expired ones are dropped.
    const auto now = clock::now().time_since_epoch().count();
    const auto forget_after = std::chrono::duration_cast<clock::duration>(opts_.visibility_timeout * 2).count();
    std::erase_if(retired_, [&](const std::shared_ptr<identity>& r) {
        return r->outstanding.load() == 0 && r->lease_until.load() + forget_after < now;
    });
    std::vector<std::shared_ptr<identity>> out{ident_};
    for (auto& r : retired_)
        if (r->outstanding.load() > 0) out.push_back(r);
    return out;
}

std::string reliable_queue::consumer_id() const { return current()->id; }
std::string reliable_queue::processing_key() const { return current()->processing_key; }

void reliable_queue::retire(const std::shared_ptr<identity>& who) {
    std::lock_guard lk(ident_mu_);
    if (ident_ != who) return;  // another thread already did
    retired_.push_back(who);
    ident_ = make_identity(opts_.consumer_id.empty() ? random_token() : retired_id(opts_.consumer_id));
}

void reliable_queue::retire_if_current(const std::string& consumer) {
    auto me = current();
    if (me->id == consumer) retire(me);
}

std::string reliable_queue::nonce_arg() { return be64(random_u64()); }

std::string reliable_queue::push(std::string_view payload) {
    std::vector<std::string> one{std::string(payload)};
    return push_batch(one).front();
}

std::vector<std::string> reliable_queue::push_batch(std::span<const std::string> payloads) {
    std::vector<std::string> ids;
    if (payloads.empty()) return ids;
    detail::check_payloads(payloads, opts_.max_payload, "reliable_queue");
    ids.reserve(payloads.size());
    std::vector<std::string> elements;
    elements.reserve(payloads.size());
    const auto now = std::chrono::system_clock::now();
    const auto first = id_counter_.fetch_add(payloads.size());
    for (std::size_t i = 0; i < payloads.size(); ++i) {
        envelope e;
        std::copy(id_prefix_.begin(), id_prefix_.end(), e.id.begin());
        auto n = first + i;
        for (int b = 15; b >= 8; --b, n >>= 8) e.id[static_cast<std::size_t>(b)] = static_cast<std::uint8_t>(n & 0xff);
        e.enqueued_at = now;
        e.payload = payloads[i];
        elements.push_back(encode_envelope(e));
        ids.push_back(to_hex(e.id));
    }
    std::vector<std::string_view> argv;
    argv.reserve(elements.size() + 2);
    argv.push_back("LPUSH");
    argv.push_back(ready_key_);
    for (const auto& el : elements) argv.push_back(el);
    auto c = pool_.borrow();
    replicated_reply r{};
    try {
        if (opts_.replicas == 0) {
            c->command(std::span<const std::string_view>(argv));
            return ids;
        }
        r = command_then_wait(*c, argv, opts_.replicas, opts_.replica_timeout);
    } catch (const reply_error& e) {
        detail::poison_if_desynchronised(*c, e);
        throw;
    }
    if (r.acks < opts_.replicas)
        throw replication_timeout("reliable_queue: push to '" + ready_key_ + "' acknowledged by " +
                                      std::to_string(r.acks) + " of " + std::to_string(opts_.replicas) +
                                      " replicas within " + std::to_string(opts_.replica_timeout.count()) +
                                      " ms (the master has it; not yet durable)",
                                  r.acks, opts_.replicas);
    return ids;
}

void reliable_queue::start_consumer() {
    if (started_.load(std::memory_order_acquire)) return;
    // Concurrent first pops must not each run the start-up release: a late one would return
    // a message another thread has just popped.
    std::lock_guard start(start_mu_);
    if (started_.load()) return;
    {
        // A processing list under our id already (a previous process with this consumer id
        // died less than a lease ago) holds nothing this object handed out: return it now
        // rather than adopting it silently, then register.
        auto me = current();
        auto c = pool_.borrow();
        const std::string nonce = nonce_arg(), now = now_arg();
        detail::queue_release_script().run(
            *c, {consumers_key_, ready_key_, dead_key_, me->processing_key, me->heartbeat_key},
            {me->id, max_attempts_, nonce, now});
        heartbeat(*c, *me);
    }
    if (opts_.recover_on_start) (void)recover();
    {
        std::lock_guard lk(mu_);
        stop_ = false;
    }
    thread_ = std::thread([this] { background(); });
    started_.store(true, std::memory_order_release);
}

void reliable_queue::heartbeat(connection& c, identity& who) {
    const auto sent = std::chrono::steady_clock::now();
    const auto believed = who.lease_until.load();
    const auto r = detail::queue_register_script().run(c, {consumers_key_, who.heartbeat_key}, {who.id, ttl_ms_});
    const auto& e = r.elements();
    const bool intact = e.at(0).integer() == 0 && e.at(1).integer() == 1;
    if (!intact && believed > sent.time_since_epoch().count()) {
        // The server dropped the lease before the bound we computed (volatile-* eviction, a
        // clock step, a manual DEL): plain moves trusting that bound could land in an
        // unregistered list (Q4). From now on every move goes with a renewal.
        lease_losses_.fetch_add(1);
        distrust_lease_.store(true);
    }
    renewed(who, sent, opts_.visibility_timeout);
}

void reliable_queue::register_after_move(connection& c, identity& who) noexcept {
    try {
        heartbeat(c, who);
    } catch (const std::exception&) {
        // The move happened, so the delivery is returned all the same (dropping it would
        // strand the message); the background thread keeps renewing, and if this consumer
        // dies first, recovery returns the message as long as it is registered.
    }
}

void reliable_queue::background() {
    using clock = std::chrono::steady_clock;
    auto next_recover = clock::now() + opts_.recover_interval;
    std::unique_lock lk(mu_);
    while (!stop_) {
        cv_.wait_for(lk, opts_.heartbeat_interval, [&] { return stop_; });
        if (stop_) break;
        lk.unlock();
        try {
            auto c = pool_.borrow();
            for (auto& who : to_renew()) heartbeat(*c, *who);
            if (opts_.recover_interval > milliseconds(0) && clock::now() >= next_recover) {
                next_recover = clock::now() + opts_.recover_interval;
                c.reset();
                (void)recover();
            }
        } catch (const std::exception&) {
            // Server unreachable: the lease may lapse and others recover our messages;
            // our acks then report false. Keep trying.
            hb_failures_.fetch_add(1);
        }
        lk.lock();
    }
}

std::optional<delivery> reliable_queue::pop(milliseconds timeout) { return pop(timeout, std::stop_token{}); }

std::optional<delivery> reliable_queue::pop(milliseconds timeout, std::stop_token stop) {
    start_consumer();
    auto me = current();
    // Counted before the move, not after: if another thread retires this identity meanwhile,
    // its lease is still renewed for the message this pop may be moving (Q3).
    me->outstanding.fetch_add(1);
    try {
        auto d = pop_as(*me, timeout, stop);
        if (!d) me->outstanding.fetch_sub(1);
        return d;
    } catch (const reply_error&) {
        me->outstanding.fetch_sub(1);
        throw;  // the server refused the command: nothing moved
    } catch (const error&) {
        // A move may have happened without its reply: no handler holds it, so the retired
        // lease must run out for recovery to return it.
        me->outstanding.fetch_sub(1);
        retire(me);
        throw;
    }
}

std::optional<delivery> reliable_queue::pop_as(identity& me, milliseconds timeout, const std::stop_token& stop) {
    using clock = std::chrono::steady_clock;
    auto renewed = [&](clock::time_point sent) { redcoord::renewed(me, sent, opts_.visibility_timeout); };
    const auto margin = opts_.visibility_timeout / 4;
    // Saturating: pop(milliseconds::max()) waits until a message comes (C8).
    const auto deadline = deadline_after(timeout);
    auto c = pool_.borrow();
    const auto cmd_timeout = c->where().command_timeout;
    // Each block is shorter than half a lease and than the reply deadline of a pipeline.
    auto cap = opts_.visibility_timeout / 2;
    if (cmd_timeout > milliseconds(0)) cap = std::min(cap, std::max(cmd_timeout / 2, milliseconds(1)));
    for (bool first = true;; first = false) {
        if (!first && stop.stop_requested()) return std::nullopt;
        const auto now = clock::now();
        const auto left = time_left(deadline);
        if (!first && left < milliseconds(1)) return std::nullopt;
        // Only a zero timeout takes the non-blocking path: BLMOVE on a non-empty list
        // answers at once, so a non-empty queue costs one command either way.
        const auto block = left < milliseconds(1) ? milliseconds(0) : std::min(left, cap);
        const auto lease = clock::time_point(clock::duration(me.lease_until.load()));
        reply r;
        if (!distrust_lease_.load() && lease - now > block + margin) {
            // The lease outlives this command by `margin` even if it blocks fully, so the
            // move lands while we are registered: plain LMOVE/BLMOVE, as cheap as raw Redis.
            if (block == milliseconds(0)) {
                r = c->command({"LMOVE", ready_key_, me.processing_key, "RIGHT", "LEFT"});
            } else {
                const std::string secs = detail::seconds_arg(block);
                const std::string_view argv[] = {"BLMOVE", ready_key_, me.processing_key, "RIGHT", "LEFT", secs};
                r = c->command_for(detail::blocking_deadline(block, cmd_timeout), argv);
            }
            // Stalled past the bound (e.g. the process was stopped)? Re-register at once, so
            // a message moved after a lapse is reclaimable if we die now.
            if (!r.is_nil() && clock::now() + margin > lease) register_after_move(*c, me);
        } else if (block == milliseconds(0)) {
            // Lease short or unknown: renew and move in one script.
            const auto sent = clock::now();
            r = detail::queue_pop_script().run(*c, {consumers_key_, me.heartbeat_key, ready_key_, me.processing_key},
                                               {me.id, ttl_ms_});
            renewed(sent);
        } else {
            // Renew in a transaction pipelined right before the BLMOVE (one round trip), so
            // the lease outlives the block whatever the client does meanwhile.
            const auto sent = clock::now();
            auto replies = c->pipeline({{"MULTI"},
                                        {"SADD", consumers_key_, me.id},
                                        {"SET", me.heartbeat_key, "1", "PX", ttl_ms_},
                                        {"EXEC"},
                                        {"BLMOVE", ready_key_, me.processing_key, "RIGHT", "LEFT",
                                         detail::seconds_arg(block)}});
            // The BLMOVE runs whatever became of the transaction: look at its reply first, and
            // never drop a message it moved (Q5).
            r = std::move(replies[4]);
            const bool moved = !r.is_nil() && !r.is_error();
            if (transaction_renewed(replies)) {
                renewed(sent);
            } else if (moved) {
                register_after_move(*c, me);
            } else {
                for (auto& x : replies)
                    if (x.is_error()) throw reply_error(x.text());
                throw protocol_error("reliable_queue: lease renewal transaction aborted");
            }
            if (r.is_error()) throw reply_error(r.text());
        }
        if (!r.is_nil()) {
            delivery d;
            static_cast<message&>(d) = to_message(r.text());
            d.consumer = me.id;
            d.element = r.text();
            return d;
        }
        if (left < milliseconds(1)) return std::nullopt;
    }
}

bool reliable_queue::may_retry_settle(const identity* owner, milliseconds backoff,
                                      std::chrono::steady_clock::time_point give_up) const {
    using clock = std::chrono::steady_clock;
    // Without a lease we know of (a delivery popped elsewhere) there is nothing to bound
    // the wait by: the caller decides.
    if (owner == nullptr) return false;
    const auto next = clock::now() + backoff;
    const auto lease = clock::time_point(clock::duration(owner->lease_until.load()));
    return next < give_up && next + opts_.visibility_timeout / 4 < lease;
}

template <class F>
auto reliable_queue::settling(const delivery& d, F&& f) {
    auto owner = owner_of(d.consumer);
    // Settled whatever the outcome: the caller is done with it.
    auto settle = [&] {
        if (owner && owner->outstanding.load() > 0) owner->outstanding.fetch_sub(1);
    };
    const auto give_up = deadline_after(opts_.visibility_timeout);
    auto backoff = first_settle_backoff;
    for (;;) {
        // Failures before the command was sent (no connection, a refused handshake) and
        // error replies both leave the server unchanged: the message is still ours to settle.
        std::exception_ptr unchanged;
        bool sent = false;
        try {
            auto c = pool_.borrow();
            sent = true;
            try {
                auto r = f(*c);
                settle();
                return r;
            } catch (const reply_error& e) {
                detail::poison_if_desynchronised(*c, e);
                throw;
            }
        } catch (const reply_error&) {
            unchanged = std::current_exception();
        } catch (const error& e) {
            if (!sent) {
                unchanged = std::current_exception();
            } else {
                // Sent, reply lost: whether it was removed is unknown. If it is still there,
                // the retired identity's lease runs out and recovery returns it (D1).
                settle();
                retire_if_current(d.consumer);
                throw outcome_unknown(std::string("reliable_queue: ack/nack sent, reply lost (") + e.what() +
                                      "); the message may still be in flight and come back");
            }
        }
        // Refused (BUSY, LOADING, READONLY, OOM, NOREPLICAS, ...) or not sent: retry while
        // the lease surely holds, so the message neither waits in a live list nor is
        // delivered twice (Q1, Q8). Past that, give it up to recovery.
        if (!may_retry_settle(owner.get(), backoff, give_up)) {
            settle();
            retire_if_current(d.consumer);
            std::rethrow_exception(unchanged);
        }
        settle_retries_.fetch_add(1);
        std::this_thread::sleep_for(backoff);
        backoff = std::min(backoff * 2, max_settle_backoff);
    }
}

bool reliable_queue::ack(const delivery& d) {
    const std::string pkey = processing_prefix_ + d.consumer;
    return settling(d, [&](connection& c) { return c.command({"LREM", pkey, "1", d.element}).integer() == 1; });
}

bool reliable_queue::nack(const delivery& d, nack_action action) {
    const std::string pkey = processing_prefix_ + d.consumer;
    return settling(d, [&](connection& c) {
        const std::string nonce = nonce_arg(), now = now_arg();
        auto r = detail::queue_nack_script().run(
            c, {pkey, ready_key_, dead_key_},
            {d.element, action == nack_action::requeue ? "requeue" : "dead", max_attempts_, nonce, now});
        return r.integer() != 0;
    });
}

recovery_result reliable_queue::recover() {
    auto c = pool_.borrow();
    const std::string nonce = nonce_arg(), now = now_arg();
    auto r = detail::queue_recover_script().run(*c, {consumers_key_, ready_key_, dead_key_},
                                                {processing_prefix_, heartbeat_prefix_, max_attempts_, nonce, now});
    const auto& e = r.elements();
    return {static_cast<std::size_t>(e.at(0).integer()), static_cast<std::size_t>(e.at(1).integer()),
            static_cast<std::size_t>(e.at(2).integer())};
}

std::vector<message> reliable_queue::dead_letters(std::size_t limit) {
    const std::string start = limit == 0 ? "0" : "-" + std::to_string(limit);
    auto r = pool_.command({"LRANGE", dead_key_, start, "-1"});
    std::vector<message> out;
    const auto& e = r.elements();
    out.reserve(e.size());
    // The list grows at the left, so the oldest is at the right end.
    for (auto it = e.rbegin(); it != e.rend(); ++it) out.push_back(to_message(it->text()));
    return out;
}

std::size_t reliable_queue::requeue_dead(std::size_t limit) {
    auto c = pool_.borrow();
    auto r = detail::queue_requeue_dead_script().run(*c, {dead_key_, ready_key_}, {std::to_string(limit)});
    return static_cast<std::size_t>(r.integer());
}

reliable_queue_stats reliable_queue::stats() {
    auto c = pool_.borrow();
    auto r = detail::queue_stats_script().run(*c, {consumers_key_, ready_key_, dead_key_},
                                              {processing_prefix_, heartbeat_prefix_});
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

std::size_t reliable_queue::size() { return static_cast<std::size_t>(pool_.command({"LLEN", ready_key_}).integer()); }

void reliable_queue::close() {
    std::lock_guard start(start_mu_);
    if (!started_.load()) return;
    started_.store(false);
    {
        std::lock_guard lk(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    // Return what this object holds under its current and any retired identity.
    std::vector<std::shared_ptr<identity>> all;
    {
        std::lock_guard lk(ident_mu_);
        all = retired_;
        retired_.clear();
        all.push_back(ident_);
    }
    auto c = pool_.borrow();
    for (auto& me : all) {
        me->lease_until = 0;  // the release script deletes the heartbeat key
        me->outstanding = 0;
        const std::string nonce = nonce_arg(), now = now_arg();
        detail::queue_release_script().run(
            *c, {consumers_key_, ready_key_, dead_key_, me->processing_key, me->heartbeat_key},
            {me->id, max_attempts_, nonce, now});
    }
}

}  // namespace redcoord
