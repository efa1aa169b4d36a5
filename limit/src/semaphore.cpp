#include <redcoord/core/detail/observe.hpp>
#include <redcoord/core/detail/release_waiter.hpp>
#include <redcoord/core/detail/timer_service.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/holder_label.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/core/token.hpp>
#include <redcoord/limit/semaphore.hpp>

#include "lease.hpp"
#include "limit_common.hpp"
#include "limit_scripts.hpp"

#include <algorithm>
#include <mutex>

namespace redcoord {

using std::chrono::milliseconds;
using steady = std::chrono::steady_clock;

namespace detail {

void validate(const semaphore_options& o) {
    if (o.permits < 1) throw invalid_argument("semaphore_options::permits must be >= 1");
    if (o.ttl <= milliseconds::zero()) throw invalid_argument("semaphore_options::ttl must be > 0");
    if (o.max_retry_interval <= milliseconds::zero())
        throw invalid_argument("semaphore_options::max_retry_interval must be > 0");
}

// What a permit needs of its semaphore, kept alive by the permits themselves.
struct semaphore_shared {
    connection_pool& pool;
    std::string name;
    semaphore_options opts;
    std::string key = make_key(opts.prefix, "semaphore", name);
    std::string fence_key = make_key(opts.prefix, "semaphore", name, "fence");
    std::string waiting_key = make_key(opts.prefix, "semaphore", name, "waiting");
    std::string channel = make_key(opts.prefix, "semaphore", name, "released");
    std::string label = resolve_holder_label(opts.label);  // in each acquisition's token
    // Metrics (empty handles when off): permits held here, acquire call durations.
    gauge_handle held{};
    histogram_handle acquired{}, timed_out{}, failed{};
};

namespace {

// Runs a write whose effect the caller must know: one that was sent and lost its reply is
// outcome_unknown; one that could not be sent (borrow, connect) throws as it came.
reply run_known(const semaphore_shared& s, const script& lua,
                std::span<const std::string_view> keys, std::span<const std::string_view> args) {
    auto c = s.pool.borrow_for(s.key);
    try {
        return lua.run(*c, keys, args);
    } catch (const reply_error&) {
        rethrow_with_script(lua);
    } catch (const error& e) {
        throw outcome_unknown(std::string("semaphore '") + s.name + "': " + e.what());
    }
}

}  // namespace

struct permit_state {
    std::shared_ptr<const semaphore_shared> sem;
    std::string token;
    std::uint64_t n = 0;
    std::uint64_t fence = 0;
    std::mutex mu;
    lease_clock lease;                // guarded by mu
    bool released = false;            // guarded by mu
    std::unique_ptr<timer> watchdog;  // last: destroyed (and its tick awaited) first

    // Sends the extension; true when extended. Call with mu held.
    bool extend_locked(milliseconds ttl) {
        const auto sent_at = steady::now();
        const std::string_view keys[] = {sem->key, sem->waiting_key};
        const auto n_text = std::to_string(n);
        const auto ttl_text = std::to_string(ttl.count());
        const std::string_view args[] = {token, n_text, ttl_text};
        const auto r = run_known(*sem, semaphore_extend_script(), keys, args);
        return lease.settle(r.integer() == 1, sent_at, ttl);
    }

    // The watchdog's tick: extend at a third of the ttl, retry a failed extension while the
    // validity lasts, report the loss at its end.
    std::optional<steady::time_point> tick() {
        std::lock_guard l(mu);
        if (released || lease.lost) return std::nullopt;
        const auto ttl = sem->opts.ttl;
        return lease.watchdog_tick(ttl, [&] { return extend_locked(ttl); });
    }

    // Releases (once); true when all n leases were still held.
    bool release() {
        watchdog.reset();  // outside mu: waits for a tick in progress, which takes mu
        std::lock_guard l(mu);
        if (released) return false;
        released = true;
        sem->held.add(-static_cast<double>(n));
        const std::string_view keys[] = {sem->key, sem->waiting_key};
        const auto n_text = std::to_string(n);
        const std::string_view args[] = {token, n_text};
        return static_cast<std::uint64_t>(
                   run_known(*sem, semaphore_release_script(), keys, args).integer()) == n;
    }
};

}  // namespace detail

// ---- permit ----

permit::permit() noexcept = default;
permit::permit(std::shared_ptr<detail::permit_state> s) noexcept : state_(std::move(s)) {}
permit::permit(permit&& other) noexcept = default;

permit& permit::operator=(permit&& other) noexcept {
    if (this != &other) {
        permit gone(std::move(*this));
        state_ = std::move(other.state_);
    }
    return *this;
}

permit::~permit() {
    if (!state_) return;
    try {
        (void)state_->release();
    } catch (...) {
        // Best effort: the leases end by their TTL.
    }
}

bool permit::held() const noexcept {
    if (!state_) return false;
    std::lock_guard l(state_->mu);
    return !state_->released;
}

std::uint64_t permit::count() const noexcept { return state_ ? state_->n : 0; }

std::uint64_t permit::fencing_token() const noexcept { return state_ ? state_->fence : 0; }

const std::string& permit::token() const noexcept {
    static const std::string none;
    return state_ ? state_->token : none;
}

std::chrono::steady_clock::time_point permit::valid_until() const noexcept {
    if (!state_) return {};
    std::lock_guard l(state_->mu);
    return state_->lease.valid_until;
}

bool permit::lost() const noexcept {
    if (!state_) return false;
    std::lock_guard l(state_->mu);
    return !state_->released && (state_->lease.lost || steady::now() >= state_->lease.valid_until);
}

bool permit::extend(std::chrono::milliseconds ttl) {
    if (ttl <= milliseconds::zero()) throw invalid_argument("permit::extend: ttl must be > 0");
    if (!state_) return false;
    std::lock_guard l(state_->mu);
    if (state_->released || state_->lease.lost) return false;
    return state_->extend_locked(ttl);
}

bool permit::extend() { return state_ && extend(state_->sem->opts.ttl); }

bool permit::release() {
    if (!state_) return false;
    auto s = std::move(state_);
    return s->release();
}

// ---- semaphore ----

struct semaphore::impl {
    std::shared_ptr<const detail::semaphore_shared> shared;
    std::mutex waiter_mu;
    std::unique_ptr<detail::release_waiter> waiter;

    detail::release_waiter& release_waiter() {
        std::lock_guard l(waiter_mu);
        if (!waiter)
            waiter = std::make_unique<detail::release_waiter>(
                shared->pool.runtime(), std::vector<endpoint>{shared->pool.where()},
                shared->channel);
        return *waiter;
    }

    struct attempt_result {
        std::shared_ptr<detail::permit_state> got;
        milliseconds next_free{0};
    };

    // `waiter_id`: "" for a caller that will not wait, else the id it queues under.
    attempt_result attempt(std::uint64_t n, const std::string& waiter_id) {
        const auto& s = *shared;
        auto st = std::make_shared<detail::permit_state>();
        st->sem = shared;
        st->token = labelled_token(s.label);
        st->n = n;
        const std::string_view keys[] = {s.key, s.fence_key, s.waiting_key};
        const std::string args[] = {st->token,
                                    std::to_string(n),
                                    std::to_string(s.opts.permits),
                                    std::to_string(s.opts.ttl.count()),
                                    waiter_id,
                                    std::to_string(s.opts.max_retry_interval.count()),
                                    std::to_string(detail::waiter_grace.count())};
        const auto sent_at = steady::now();
        reply r;
        try {
            r = detail::semaphore_acquire_script().run(s.pool, keys, args);
        } catch (...) {
            detail::rethrow_with_script(detail::semaphore_acquire_script());
        }
        if (!r.is_array() || r.elements().size() != 3)
            throw protocol_error("semaphore acquire: unexpected reply shape");
        const auto& e = r.elements();
        attempt_result out;
        if (e[0].integer() != 1) {
            out.next_free = milliseconds(std::max<std::int64_t>(0, e[1].integer()));
            return out;
        }
        st->fence = static_cast<std::uint64_t>(e[1].integer());
        s.held.add(static_cast<double>(n));
        st->lease.start(sent_at, s.opts.ttl);
        if (s.opts.watchdog) {
            auto* raw = st.get();
            st->watchdog = std::make_unique<detail::timer>(s.pool.runtime()->timers(),
                                                           [raw] { return raw->tick(); });
            st->watchdog->arm(steady::now() + s.opts.ttl / 3);
        }
        out.got = std::move(st);
        return out;
    }

    // Best effort: a caller that gave up stops holding newcomers back at once (else its entry
    // lapses by itself).
    void leave_queue(const std::string& waiter_id) noexcept {
        try {
            (void)shared->pool.command({"ZREM", shared->waiting_key, waiter_id});
        } catch (...) {}
    }

    // The acquire loop: attempts, woken by releases or by the awaited lease's end.
    std::optional<permit> wait_for_permits(std::uint64_t n, steady::time_point deadline);
};

semaphore::semaphore(connection_pool& pool, std::string name, semaphore_options opts) {
    detail::validate_limit_name(name, "semaphore name");
    detail::validate(opts);
    auto shared = std::make_shared<detail::semaphore_shared>(
        detail::semaphore_shared{pool, std::move(name), std::move(opts)});
    if (const detail::metrics_scope ms(*pool.runtime()); ms) {
        using detail::metric;
        const auto n = ms.name(shared->name);
        shared->held = ms.gauge(metric::semaphore_permits, {{"name", n}, {"state", "held"}});
        shared->acquired =
            ms.histogram(metric::semaphore_acquire_seconds, {{"name", n}, {"outcome", "acquired"}});
        shared->timed_out =
            ms.histogram(metric::semaphore_acquire_seconds, {{"name", n}, {"outcome", "timeout"}});
        shared->failed =
            ms.histogram(metric::semaphore_acquire_seconds, {{"name", n}, {"outcome", "error"}});
    }
    impl_ = std::make_shared<impl>();
    impl_->shared = std::move(shared);
}

semaphore::~semaphore() = default;

std::optional<permit> semaphore::try_acquire(std::uint64_t n) {
    return acquire_until(n, steady::now());
}

std::optional<permit> semaphore::acquire_until(std::uint64_t n, steady::time_point deadline) {
    detail::validate_cost(n, impl_->shared->opts.permits, "semaphore's permits");
    const auto& sh = *impl_->shared;
    const auto started = steady::now();
    try {
        auto got = impl_->wait_for_permits(n, deadline);
        (got ? sh.acquired : sh.timed_out).observe_since(started);
        return got;
    } catch (...) {
        sh.failed.observe_since(started);
        throw;
    }
}

std::optional<permit> semaphore::impl::wait_for_permits(std::uint64_t n,
                                                        steady::time_point deadline) {
    std::shared_ptr<detail::permit_state> got;
    const bool ok =
        detail::wait_for_release([this]() -> detail::release_waiter& { return release_waiter(); },
                                 deadline, {shared->opts.max_retry_interval},
                                 [&](const std::string& waiter_id) {
                                     auto r = attempt(n, waiter_id);
                                     got = std::move(r.got);
                                     return detail::wait_attempt{got != nullptr, r.next_free};
                                 },
                                 [this](const std::string& waiter_id) { leave_queue(waiter_id); });
    if (!ok) return std::nullopt;
    return permit(std::move(got));
}

permit semaphore::acquire(std::uint64_t n) { return *acquire_until(n, forever()); }

const std::string& semaphore::name() const noexcept { return impl_->shared->name; }

const semaphore_options& semaphore::options() const noexcept { return impl_->shared->opts; }

}  // namespace redcoord
