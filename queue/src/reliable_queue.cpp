#include <redcoord/queue/reliable_queue.hpp>

#include <redcoord/core/errors.hpp>
#include <redcoord/core/token.hpp>

#include "reliable_scripts.hpp"
#include "seconds_arg.hpp"

#include <algorithm>
#include <cstdio>

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
}

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
    ++generation_;
    ident_ = make_identity(opts_.consumer_id.empty() ? random_token()
                                                     : opts_.consumer_id + "~" + std::to_string(generation_));
}

std::string reliable_queue::nonce_arg() { return be64(random_u64()); }

std::string reliable_queue::push(std::string_view payload) {
    std::vector<std::string> one{std::string(payload)};
    return push_batch(one).front();
}

std::vector<std::string> reliable_queue::push_batch(std::span<const std::string> payloads) {
    std::vector<std::string> ids;
    if (payloads.empty()) return ids;
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
    if (opts_.replicas == 0) {
        c->command(std::span<const std::string_view>(argv));
        return ids;
    }
    const auto r = command_then_wait(*c, argv, opts_.replicas, opts_.replica_timeout);
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
    detail::queue_register_script().run(c, {consumers_key_, who.heartbeat_key}, {who.id, ttl_ms_});
    renewed(who, sent, opts_.visibility_timeout);
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

std::optional<delivery> reliable_queue::pop(milliseconds timeout) {
    start_consumer();
    auto me = current();
    try {
        auto d = pop_as(*me, timeout);
        if (d) me->outstanding.fetch_add(1);
        return d;
    } catch (const reply_error&) {
        throw;  // the server refused the command: nothing moved
    } catch (const error&) {
        retire(me);  // a move may have happened without its reply
        throw;
    }
}

std::optional<delivery> reliable_queue::pop_as(identity& me, milliseconds timeout) {
    using clock = std::chrono::steady_clock;
    auto renewed = [&](clock::time_point sent) { redcoord::renewed(me, sent, opts_.visibility_timeout); };
    const auto margin = opts_.visibility_timeout / 4;
    const auto deadline = clock::now() + std::max(timeout, milliseconds(0));
    auto c = pool_.borrow();
    const auto cmd_timeout = c->where().command_timeout;
    // Each block is shorter than half a lease and than the reply deadline of a pipeline.
    auto cap = opts_.visibility_timeout / 2;
    if (cmd_timeout > milliseconds(0)) cap = std::min(cap, std::max(cmd_timeout / 2, milliseconds(1)));
    for (bool first = true;; first = false) {
        const auto now = clock::now();
        const auto left = std::chrono::duration_cast<milliseconds>(deadline - now);
        if (!first && left < milliseconds(1)) return std::nullopt;
        // Only a zero timeout takes the non-blocking path: BLMOVE on a non-empty list
        // answers at once, so a non-empty queue costs one command either way.
        const auto block = left < milliseconds(1) ? milliseconds(0) : std::min(left, cap);
        const auto lease = clock::time_point(clock::duration(me.lease_until.load()));
        reply r;
        if (lease - now > block + margin) {
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
            if (!r.is_nil() && clock::now() + margin > lease) heartbeat(*c, me);
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
            for (auto& x : replies)
                if (x.is_error()) throw reply_error(x.text());
            if (!replies[3].is_array()) throw protocol_error("reliable_queue: lease renewal transaction aborted");
            renewed(sent);
            r = std::move(replies[4]);
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

template <class F>
auto reliable_queue::settling(const delivery& d, F&& f) {
    auto owner = owner_of(d.consumer);
    // Settled whatever the outcome: the caller is done with it.
    auto settle = [&] {
        if (owner && owner->outstanding.load() > 0) owner->outstanding.fetch_sub(1);
    };
    try {
        auto r = f();
        settle();
        return r;
    } catch (const reply_error&) {
        throw;  // refused by the server: nothing changed, still unsettled
    } catch (const error&) {
        // Unknown whether it was removed: if it is still there, let recovery return it.
        settle();
        auto me = current();
        if (me->id == d.consumer) retire(me);
        throw;
    }
}

bool reliable_queue::ack(const delivery& d) {
    return settling(d, [&] {
        auto c = pool_.borrow();
        const std::string pkey = processing_prefix_ + d.consumer;
        return c->command({"LREM", pkey, "1", d.element}).integer() == 1;
    });
}

bool reliable_queue::nack(const delivery& d, nack_action action) {
    return settling(d, [&] {
        auto c = pool_.borrow();
        const std::string pkey = processing_prefix_ + d.consumer;
        const std::string nonce = nonce_arg(), now = now_arg();
        auto r = detail::queue_nack_script().run(
            *c, {pkey, ready_key_, dead_key_},
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
