#include <redcoord/lock/distributed_lock.hpp>

#include "acquire_loop.hpp"
#include "hold_common.hpp"
#include "release_waiter.hpp"
#include "scripts.hpp"
#include "watchdog.hpp"

#include <redcoord/core/fan_out.hpp>
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
    using extend_result = detail::extend_result;

    impl(connection_pool& p, std::string r, lock_options o)
        : hold_state(std::move(r), "lock", o.prefix, {o.ttl, o.drift_factor, o.watchdog, o.max_extensions}),
          pool(p),
          opts(std::move(o)) {
        detail::validate(opts);
        // The watchdog's extension must never queue behind this object's own request.
        if (opts.watchdog && pool.options().max_size < 2)
            throw invalid_argument("lock_options::watchdog needs a pool of max_size >= 2");
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
        attempt_result out;
        reply r;
        try {
            r = opts.replicas == 0 ? run_acquire(token, keys, argv) : run_replicated(token, keys, argv, acks);
        } catch (const timeout_error&) {
            if (!cut_by_deadline()) throw;
            return out;  // given back already; the wait is over without the lock
        } catch (const pool_exhausted&) {
            if (!cut_by_deadline()) throw;
            return out;
        }
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

    // How long one request of the current acquire call may take: what is left of a timed
    // wait (try_lock_for(10ms) must not block for the pool's and connection's timeouts,
    // which are seconds), capped by command_timeout; nullopt for a call that came with no
    // time to wait (try_lock's single attempt keeps the endpoint's timeouts).
    std::optional<milliseconds> io_budget() const {
        if (!attempt_timed) return std::nullopt;
        // At least a loaded machine's round trip, so the attempt a wait makes at its deadline
        // has a chance (and does not needlessly cost the connection).
        const auto left = std::max(time_left<milliseconds>(attempt_deadline), milliseconds(10));
        return std::min(left, pool.where().command_timeout.count() > 0 ? pool.where().command_timeout : left);
    }

    pooled_connection borrow(std::optional<milliseconds> budget) {
        return budget ? pool.borrow(std::min(*budget, pool.options().borrow_timeout)) : pool.borrow();
    }

    // A timed wait bounds each request by its deadline (io_budget): one that runs out there
    // ends the wait without the lock, the deadline having passed, instead of failing it with a
    // timeout of the lock's own making.
    bool cut_by_deadline() const { return attempt_timed && clock_type::now() >= attempt_deadline; }

    // Who holds the lock, by a plain GET (the holder's token, without a waiter's mark).
    detail::refusal look() {
        const auto budget = io_budget();
        const std::string_view get[] = {"GET", key};
        reply r;
        try {
            auto conn = borrow(budget);
            r = budget ? conn->command_for(*budget, get) : conn->command(get);
        } catch (const timeout_error&) {
            if (!cut_by_deadline()) throw;
            return {};
        } catch (const pool_exhausted&) {
            if (!cut_by_deadline()) throw;
            return {};
        }
        detail::refusal out;
        if (r.is_string()) {
            out.one_holder = true;
            out.holder = detail::without_mark(r.text());
        }
        return out;
    }

    // Best effort: an undeleted key expires after ttl. Waiters that marked the key meanwhile
    // are woken. Within a timed wait it is sent without waiting for the reply, on an idle
    // connection or one connected within the budget, so a stalled server cannot hold the
    // caller past its deadline.
    void give_back(const std::string& token) noexcept {
        try {
            if (const auto budget = io_budget()) {
                connection_pool* one[] = {&pool};
                const std::string_view keys[] = {key};
                const std::string_view args[] = {token};
                fan_out_options fo;
                fo.timeout = std::max(*budget, milliseconds(20));
                fo.tuning.detach = true;
                (void)fan_out(one, detail::release_script(), keys, args, fo);
            } else {
                (void)detail::release_script().run(pool, {key}, {token});
            }
        } catch (...) {
        }
    }

    // The acquire script and WAIT in one write on one connection; `acks` gets WAIT's count.
    // A lost reply may hide a taken key: give it back (as the replicated path and Redlock's
    // step 5 do) rather than block every client, this one included, for the whole TTL.
    reply run_acquire(const std::string& token, std::span<const std::string_view> keys,
                      std::span<const std::string_view> args) {
        const auto budget = io_budget();
        auto conn = borrow(budget);  // nothing sent yet: nothing to give back
        try {
            return budget ? detail::acquire_script().run_for(*conn, *budget, keys, args)
                          : detail::acquire_script().run(*conn, keys, args);
        } catch (const reply_error&) {
            throw;  // refused: the script did not run
        } catch (...) {
            conn.reset();
            give_back(token);
            throw;
        }
    }

    reply run_replicated(const std::string& token, std::span<const std::string_view> keys,
                         std::span<const std::string_view> args, std::size_t& acks) {
        auto conn = borrow(io_budget());
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

    void commit(const attempt_result& r) { commit_hold(*r.got); }

    void not_acquired() {}

    std::optional<lock_acquisition> acquire_until(clock_type::time_point deadline) {
        return detail::gated_acquire(*this, deadline);
    }

    // One compare-and-pexpire; with replicas > 0 it counts only once they acknowledged it
    // (WAIT in the same write, as for the acquisition), else a failover could lose it.
    extend_result extend_round(const std::string& token, milliseconds ttl, clock_type::time_point) override {
        const std::string ttl_text = detail::ms_arg(ttl);
        if (opts.replicas == 0) {
            const reply r = run_write(pool, detail::extend_script(), {key}, {token, ttl_text});
            return r.integer() == 1 ? extend_result::extended : extend_result::lost;
        }
        auto conn = pool.borrow();  // nothing sent yet
        const std::string_view keys[] = {key};
        const std::string_view args[] = {token, ttl_text};
        replicated_reply rr;
        try {
            rr = run_then_wait(*conn, detail::extend_script(), keys, args, opts.replicas, opts.replica_timeout);
        } catch (const reply_error&) {
            throw;
        } catch (const error& e) {
            throw outcome_unknown(std::string("lock: reply lost, outcome unknown: ") + e.what());
        }
        if (rr.result.integer() != 1) return extend_result::lost;
        return rr.acks >= opts.replicas ? extend_result::extended : extend_result::not_confirmed;
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
    return impl_->acquire_until(deadline_after(wait));
}

std::optional<lock_acquisition> distributed_lock::acquire_until(clock_type::time_point deadline) {
    return impl_->acquire_until(deadline);
}

bool distributed_lock::extend(std::chrono::milliseconds ttl) {
    if (ttl.count() <= 0) throw invalid_argument("extend: ttl must be > 0");
    return impl_->extend_hold(std::nullopt, ttl) == detail::extend_result::extended;
}

bool distributed_lock::extend() { return extend(impl_->opts.ttl); }

bool distributed_lock::release() { return impl_->release(); }

bool distributed_lock::lost() const { return impl_->lost(); }
bool distributed_lock::held() const { return impl_->is_held(); }
std::optional<lock_acquisition> distributed_lock::current() const { return impl_->current(); }
std::uint64_t distributed_lock::fencing_token() const { return impl_->fencing_token(); }
void distributed_lock::check_held() const { impl_->check_held(); }

boost::signals2::connection distributed_lock::on_lost(lost_handler h) {
    auto c = impl_->lost_signal.connect(std::move(h));
    impl_->arm_loss_notice();
    return c;
}

void distributed_lock::lock() { detail::lock_blocking(*impl_, impl_->opts.max_retry_interval); }

bool distributed_lock::try_lock() { return impl_->acquire_until(clock_type::now()).has_value(); }

void distributed_lock::unlock() noexcept { impl_->unlock(); }

const std::string& distributed_lock::resource() const noexcept { return impl_->resource; }
const std::string& distributed_lock::key() const noexcept { return impl_->key; }

}  // namespace redcoord
