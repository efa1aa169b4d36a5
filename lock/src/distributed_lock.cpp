#include <redcoord/lock/distributed_lock.hpp>

#include "acquire_loop.hpp"
#include "hold_common.hpp"
#include "release_waiter.hpp"
#include "scripts.hpp"
#include "watchdog.hpp"

#include <redcoord/core/keys.hpp>
#include <redcoord/core/replication.hpp>
#include <redcoord/core/token.hpp>

#include <boost/signals2/signal.hpp>

#include <algorithm>

namespace redcoord {

using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace detail {
void validate(const lock_options& o) {
    if (o.ttl.count() <= 0) throw invalid_argument("lock_options::ttl must be > 0");
    if (!(o.drift_factor >= 0.0 && o.drift_factor < 0.5))
        throw invalid_argument("lock_options::drift_factor must be in [0, 0.5)");
    if (validity(o.ttl, std::chrono::microseconds(0), o.drift_factor).count() <= 0)
        throw invalid_argument("lock_options::ttl must exceed the drift allowance (ttl * drift_factor + 2 ms)");
    if (o.retry_jitter.count() < 0) throw invalid_argument("lock_options::retry_jitter must be >= 0");
    if (o.max_retry_interval.count() <= 0) throw invalid_argument("lock_options::max_retry_interval must be > 0");
    if (o.contention_backoff.count() < 0) throw invalid_argument("lock_options::contention_backoff must be >= 0");
    if (o.wake_jitter.count() < 0) throw invalid_argument("lock_options::wake_jitter must be >= 0");
    if (o.watchdog && o.max_extensions == 0)
        throw invalid_argument("lock_options::max_extensions must be > 0 when the watchdog is on");
    if (o.watchdog && o.ttl < milliseconds(3))
        throw invalid_argument("lock_options::ttl must be >= 3 ms with the watchdog (it extends at ttl/3)");
    if (o.replicas > 0 && o.replica_timeout.count() <= 0)
        throw invalid_argument("lock_options::replica_timeout must be > 0 when replicas > 0");
    if (o.replicas > 0 && o.replica_timeout >= o.ttl)
        throw invalid_argument("lock_options::replica_timeout must be < ttl");
}
}  // namespace detail

namespace {
// A write whose reply is lost may or may not have happened: say so with outcome_unknown.
reply run_write(connection_pool& pool, const script& s, std::initializer_list<std::string_view> keys,
                std::initializer_list<std::string_view> args) {
    auto conn = pool.borrow();  // connection_error / pool_exhausted: nothing was sent
    try {
        return s.run(*conn, keys, args);
    } catch (const reply_error&) {
        throw;
    } catch (const error& e) {
        throw outcome_unknown(std::string("lock: reply lost, outcome unknown: ") + e.what());
    }
}
}  // namespace

struct distributed_lock::impl : detail::hold_state {
    enum class extend_result { extended, not_held, budget_spent, lost };

    impl(connection_pool& p, std::string r, lock_options o)
        : hold_state(std::move(r), "lock", o.prefix, o.ttl), pool(p), opts(std::move(o)) {
        detail::validate(opts);
    }

    connection_pool& pool;
    lock_options opts;

    std::mutex waiter_mu;
    std::unique_ptr<detail::release_waiter> waiter;
    detail::contention_memory contention;  // only touched while the gate is held

    struct attempt_result {
        std::optional<lock_acquisition> got;
        detail::refusal why;  // when refused
    };

    // One acquire script run. With ask::mark a refusal marks the holder's key, so its
    // release publishes.
    attempt_result attempt(detail::ask what) {
        auto token = random_token();
        const auto t0 = clock_type::now();
        std::size_t acks = 0;
        const std::string_view keys[] = {key, fence_key};
        const std::string_view args[] = {token, ttl_arg, what == detail::ask::mark ? "1" : "0"};
        // The third argument only when asked for: try_lock's hot path sends two.
        const std::span<const std::string_view> argv(args, what == detail::ask::nothing ? 2 : 3);
        const reply r = opts.replicas == 0 ? run_acquire(keys, argv) : run_replicated(token, keys, argv, acks);
        attempt_result out;
        if (r.is_array()) {  // refused, with the holder's id
            const auto& e = r.elements();
            if (e.size() != 3 || e[0].integer() != 0) throw protocol_error("lock: unexpected acquire reply");
            out.why.one_holder = true;
            out.why.pttl = e[1].integer();
            out.why.holder = e[2].text();
            return out;
        }
        if (!r.is_integer() || r.integer() == 0) throw protocol_error("lock: unexpected acquire reply");
        if (r.integer() > 0) {
            const auto elapsed = std::chrono::duration_cast<std::chrono::microseconds>(clock_type::now() - t0);
            if (acks < opts.replicas) {
                // Not on enough replicas: a failover could hand the lock to someone else
                // while we hold it. Give it back and retry after replica_timeout.
                give_back(token);
                return out;
            }
            if (detail::validity(opts.ttl, elapsed, opts.drift_factor).count() <= 0) {
                // Too slow to be useful (seed 004, step 4): give it back at once.
                give_back(token);
                return out;
            }
            out.got = lock_acquisition{std::move(token),
                                       t0 + opts.ttl - detail::clock_drift(opts.ttl, opts.drift_factor),
                                       static_cast<std::uint64_t>(r.integer())};
        } else {
            out.why.one_holder = true;
            out.why.pttl = -2 - r.integer();
        }
        return out;
    }

    // Who holds the lock, by a plain GET (the holder's token, without a waiter's mark).
    detail::refusal look() {
        auto conn = pool.borrow();
        const reply r = conn->command({"GET", key});
        detail::refusal out;
        if (r.is_string()) {
            out.one_holder = true;
            out.holder = detail::without_mark(r.text());
        }
        return out;
    }

    // Best effort: an undeleted key expires after ttl. Waiters that marked the key meanwhile
    // are woken.
    void give_back(const std::string& token) noexcept {
        try {
            (void)detail::release_script().run(pool, {key}, {token});
        } catch (...) {
        }
    }

    // The acquire script and WAIT in one write on one connection; `acks` gets WAIT's count.
    reply run_acquire(std::span<const std::string_view> keys, std::span<const std::string_view> args) {
        auto conn = pool.borrow();
        return detail::acquire_script().run(*conn, keys, args);
    }

    reply run_replicated(const std::string& token, std::span<const std::string_view> keys,
                         std::span<const std::string_view> args, std::size_t& acks) {
        auto conn = pool.borrow();
        replicated_reply rr;
        try {
            rr = run_then_wait(*conn, detail::acquire_script(), keys, args, opts.replicas, opts.replica_timeout);
        } catch (...) {
            // The SET may have happened (e.g. WAIT failed after it): remove it if it did,
            // on another connection, then report.
            give_back(token);
            throw;
        }
        acks = rr.acks;
        return std::move(rr.result);
    }

    void commit(const lock_acquisition& a) {
        std::lock_guard l(mu);
        held = a;
        ++hold_id;
        extensions = 0;
        lost_flag = false;
        if (opts.watchdog) {
            if (!dog) dog = std::make_unique<detail::watchdog>([this](std::uint64_t id) { return watchdog_tick(id); });
            dog->arm(hold_id, std::max(opts.ttl / 3, milliseconds(1)));
        }
    }

    detail::release_waiter& release_waiter() {
        std::lock_guard l(waiter_mu);
        if (!waiter) waiter = std::make_unique<detail::release_waiter>(std::vector<endpoint>{pool.where()}, channel);
        return *waiter;
    }

    detail::wait_settings wait_settings() const {
        detail::wait_settings ws;
        // A refusal without a holder is an attempt given back (too few replicas acknowledged,
        // or validity used up): retry after replica_timeout, or soon.
        ws.retry_delay = opts.replicas > 0 ? opts.replica_timeout : milliseconds(1);
        ws.retry_jitter = opts.retry_jitter;
        ws.wake_jitter = opts.wake_jitter;
        ws.max_retry_interval = opts.max_retry_interval;
        ws.contention_backoff = opts.contention_backoff;
        return ws;
    }

    void commit(const attempt_result& r) {
        commit(*r.got);
    }

    void not_acquired() {}

    std::optional<lock_acquisition> acquire_until(clock_type::time_point deadline) {
        return detail::gated_acquire(*this, deadline);
    }

    void mark_lost(std::uint64_t id) {
        bool fire = false;
        {
            std::lock_guard l(mu);
            if (held && hold_id == id && !lost_flag) {
                lost_flag = true;
                fire = true;
            }
        }
        if (fire) {
            try {
                lost_signal(resource);
            } catch (...) {
                // A throwing callback must not break the watchdog or extend().
            }
        }
    }

    extend_result extend_hold(std::optional<std::uint64_t> expected, milliseconds ttl) {
        std::string token;
        std::uint64_t id = 0;
        {
            std::lock_guard l(mu);
            if (!held || (expected && *expected != hold_id)) return extend_result::not_held;
            if (lost_flag) return extend_result::lost;
            id = hold_id;
            if (clock_type::now() >= held->valid_until) {
                lost_flag = true;  // validity passed: another may hold it already
                token.clear();
            } else {
                if (extensions >= opts.max_extensions) return extend_result::budget_spent;
                ++extensions;
                token = held->token;
            }
        }
        if (token.empty()) {
            fire_lost(id);
            return extend_result::lost;
        }
        const auto t0 = clock_type::now();
        const reply r = run_write(pool, detail::extend_script(), {key}, {token, detail::ms_arg(ttl)});
        if (r.integer() == 1) {
            std::lock_guard l(mu);
            if (held && hold_id == id) held->valid_until = t0 + ttl - detail::clock_drift(ttl, opts.drift_factor);
            return extend_result::extended;
        }
        mark_lost(id);
        return extend_result::lost;
    }

    void fire_lost(std::uint64_t id) {
        {
            std::lock_guard l(mu);
            if (!held || hold_id != id) return;
        }
        try {
            lost_signal(resource);
        } catch (...) {
        }
    }

    bool watchdog_tick(std::uint64_t id) {
        try {
            switch (extend_hold(id, opts.ttl)) {
                case extend_result::extended: return true;
                default: return false;
            }
        } catch (const error&) {
            // Reply lost or node unreachable: the old validity still stands; try again at the
            // next tick unless that would be too late.
            clock_type::time_point until;
            {
                std::lock_guard l(mu);
                if (!held || hold_id != id) return false;
                until = held->valid_until;
            }
            if (clock_type::now() + opts.ttl / 3 < until) return true;
            mark_lost(id);
            return false;
        }
    }

    bool release() {
        auto a = take_hold();
        if (!a) return false;
        struct leave_on_exit {
            detail::local_gate& g;
            ~leave_on_exit() { g.leave(); }
        } leave{gate};
        const reply r = run_write(pool, detail::release_script(), {key}, {a->token});
        return r.integer() == 1;
    }

    // Lockable::unlock: the release is written and not waited for (the connection's next
    // user skips its reply), so a holder that re-acquires pipelines both.
    void unlock() noexcept {
        auto a = take_hold();
        if (!a) return;
        try {
            detail::release_script().send(pool, {key}, {a->token});
        } catch (...) {
            // Not sent: the key expires after its TTL.
        }
        gate.leave();
    }
};

distributed_lock::distributed_lock(connection_pool& pool, std::string resource, lock_options opts)
    : impl_(std::make_unique<impl>(pool, std::move(resource), std::move(opts))) {}

distributed_lock::~distributed_lock() {
    impl_->dog.reset();  // joins the watchdog before anything it touches goes away
    try {
        (void)impl_->release();
    } catch (...) {
        // Never throw from a destructor; an unreleased key expires after its TTL.
    }
    std::lock_guard l(impl_->waiter_mu);
    impl_->waiter.reset();
}

std::optional<lock_acquisition> distributed_lock::acquire(std::chrono::milliseconds wait) {
    return impl_->acquire_until(clock_type::now() + std::max(wait, milliseconds(0)));
}

std::optional<lock_acquisition> distributed_lock::acquire_until(clock_type::time_point deadline) {
    return impl_->acquire_until(deadline);
}

bool distributed_lock::extend(std::chrono::milliseconds ttl) {
    if (ttl.count() <= 0) throw invalid_argument("extend: ttl must be > 0");
    return impl_->extend_hold(std::nullopt, ttl) == impl::extend_result::extended;
}

bool distributed_lock::extend() { return extend(impl_->opts.ttl); }

bool distributed_lock::release() { return impl_->release(); }

bool distributed_lock::lost() const { return impl_->lost(); }
bool distributed_lock::held() const { return impl_->is_held(); }
std::optional<lock_acquisition> distributed_lock::current() const { return impl_->current(); }
std::uint64_t distributed_lock::fencing_token() const { return impl_->fencing_token(); }
void distributed_lock::check_held() const { impl_->check_held(); }

boost::signals2::connection distributed_lock::on_lost(lost_handler h) {
    return impl_->lost_signal.connect(std::move(h));
}

void distributed_lock::lock() { (void)impl_->acquire_until(forever()); }

bool distributed_lock::try_lock() { return impl_->acquire_until(clock_type::now()).has_value(); }

void distributed_lock::unlock() noexcept { impl_->unlock(); }

const std::string& distributed_lock::resource() const noexcept { return impl_->resource; }
const std::string& distributed_lock::key() const noexcept { return impl_->key; }

}  // namespace redcoord
