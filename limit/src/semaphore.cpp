#include <redcoord/core/detail/async_link.hpp>
#include <redcoord/core/detail/async_script.hpp>
#include <redcoord/core/detail/observe.hpp>
#include <redcoord/core/detail/options_check.hpp>
#include <redcoord/core/detail/refusal.hpp>
#include <redcoord/core/detail/release_waiter.hpp>
#include <redcoord/core/detail/timer_service.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/holder_label.hpp>
#include <redcoord/core/replication.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/core/token.hpp>
#include <redcoord/limit/detail/async_start.hpp>
#include <redcoord/limit/semaphore.hpp>

#include "async_wait_loop.hpp"

#include "lease.hpp"
#include "limit_common.hpp"
#include "limit_scripts.hpp"
#include "options_check.hpp"
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <mutex>

namespace redcoord {

using std::chrono::milliseconds;
using steady = std::chrono::steady_clock;

namespace detail {

void validate(const semaphore_options& o) {
    if (o.permits < 1) throw invalid_argument("semaphore_options::permits must be >= 1");
    check_timing(o.timing, "semaphore_options");
    check_replication(o.replication, o.timing.ttl, "semaphore_options");
}

// What a permit needs of its semaphore, kept alive by the permits themselves.
struct semaphore_shared {
    connection_pool& pool;
    std::string name;
    semaphore_options opts;
    std::string key = make_key(opts.prefix, "semaphore", name);
    std::string fence_key = make_key(opts.prefix, "semaphore", name, "fence");
    std::string waiting_key = make_key(opts.prefix, "semaphore", name, "waiting");
    std::string queue_key = make_key(opts.prefix, "semaphore", name, "queue");  // fifo
    std::string channel = make_key(opts.prefix, "semaphore", name, "released");
    std::string label = resolve_holder_label(opts.label);  // in each acquisition's token
    // Metrics (empty handles when off): permits held here, acquire call durations.
    gauge_handle held{};
    histogram_handle acquired{}, timed_out{}, failed{};
};

namespace {

// Runs a write whose effect the caller must know: one that was sent and lost its reply is
// outcome_unknown; one that could not be sent (borrow, connect) throws as it came.
// With `replicas` > 0 the write is followed by WAIT in the same write, and `acks` gets the
// count.
reply run_known(const semaphore_shared& s, const script& lua,
                std::span<const std::string_view> keys, std::span<const std::string_view> args,
                std::size_t replicas = 0, std::size_t* acks = nullptr) {
    auto c = s.pool.borrow_for(s.key);
    try {
        if (replicas == 0) return lua.run(*c, keys, args);
        auto rr = run_then_wait(*c, lua, keys, args, replicas, s.opts.replication.timeout);
        *acks = rr.acks;
        return std::move(rr.result);
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
    // @throws replication_timeout when it extended but too few replicas acknowledged: not
    // lost, the validity not moved (the watchdog retries).
    bool extend_locked(milliseconds ttl) {
        const auto sent_at = lease.now();
        const std::string_view keys[] = {sem->key, sem->waiting_key};
        const auto n_text = std::to_string(n);
        const auto ttl_text = std::to_string(ttl.count());
        const std::string_view args[] = {token, n_text, ttl_text};
        const auto replicas = sem->opts.replication.replicas;
        std::size_t acks = 0;
        const auto r = run_known(*sem, semaphore_extend_script(), keys, args, replicas, &acks);
        if (r.integer() == 1 && acks < replicas)
            throw replication_timeout("semaphore '" + sem->name + "': extension acknowledged by " +
                                          std::to_string(acks) + " of " + std::to_string(replicas) +
                                          " replicas",
                                      acks, replicas);
        return lease.settle(r.integer() == 1, sent_at, ttl);
    }

    // The watchdog's tick: extend at a third of the ttl, retry a failed extension while the
    // validity lasts, report the loss at its end.
    std::optional<steady::time_point> tick() {
        std::lock_guard l(mu);
        if (released || lease.lost) return std::nullopt;
        const auto ttl = sem->opts.timing.ttl;
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
    return !state_->released &&
           (state_->lease.lost || state_->lease.now() >= state_->lease.valid_until);
}

bool permit::extend(std::chrono::milliseconds ttl) {
    if (ttl <= milliseconds::zero()) throw invalid_argument("permit::extend: ttl must be > 0");
    if (!state_) return false;
    std::lock_guard l(state_->mu);
    if (state_->released || state_->lease.lost) return false;
    try {
        return state_->extend_locked(ttl);
    } catch (const replication_timeout&) {
        return false;
    }
}

bool permit::extend() { return state_ && extend(state_->sem->opts.timing.ttl); }

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

    // The acquire script's call for `token`; `waiter_id`: "" for a caller that will not wait,
    // else the id it queues under.
    [[nodiscard]] detail::script_call acquire_call(const std::string& token, std::uint64_t n,
                                                   const std::string& waiter_id) const {
        const auto& s = *shared;
        return {&detail::semaphore_acquire_script(),
                {s.key, s.fence_key, s.waiting_key, s.queue_key},
                {token, std::to_string(n), std::to_string(s.opts.permits),
                 std::to_string(s.opts.timing.ttl.count()), waiter_id,
                 std::to_string(s.opts.timing.max_retry_interval.count()),
                 std::to_string(detail::waiter_grace.count()), s.opts.fifo ? "1" : "0"}};
    }

    // The release script's call that gives `token`'s n permits back.
    [[nodiscard]] detail::script_call release_call(const std::string& token,
                                                   std::uint64_t n) const {
        const auto& s = *shared;
        return {&detail::semaphore_release_script(),
                {s.key, s.waiting_key},
                {token, std::to_string(n)}};
    }

    // The leave script's call for `waiter_id`.
    [[nodiscard]] detail::script_call leave_call(const std::string& waiter_id) const {
        const auto& s = *shared;
        return {
            &detail::semaphore_leave_script(), {s.key, s.waiting_key, s.queue_key}, {waiter_id}};
    }

    // Reads the acquire script's reply to an attempt sent at `sent_at`: on a grant, the
    // permit's state (lease started, watchdog armed).
    // @throws protocol_error for a reply of another shape.
    attempt_result settle(const reply& r, const std::string& token, std::uint64_t n,
                          steady::time_point sent_at) {
        const auto& s = *shared;
        if (!r.is_array() || r.elements().size() != 3)
            throw protocol_error("semaphore acquire: unexpected reply shape");
        const auto& e = r.elements();
        attempt_result out;
        if (e[0].integer() != 1) {
            out.next_free = milliseconds(std::max<std::int64_t>(0, e[1].integer()));
            return out;
        }
        auto st = std::make_shared<detail::permit_state>();
        st->sem = shared;
        st->token = token;
        st->n = n;
        st->fence = static_cast<std::uint64_t>(e[1].integer());
        s.held.add(static_cast<double>(n));
        st->lease.drift_factor = s.opts.timing.drift_factor;
        st->lease.clock = &s.pool.runtime()->clock();
        st->lease.start(sent_at, s.opts.timing.ttl);
        if (s.opts.watchdog) {
            auto* raw = st.get();
            st->watchdog = std::make_unique<detail::timer>(s.pool.runtime()->timers(),
                                                           [raw] { return raw->tick(); });
            st->watchdog->arm(st->lease.now() + s.opts.timing.ttl / 3);
        }
        out.got = std::move(st);
        return out;
    }

    // `waiter_id`: "" for a caller that will not wait, else the id it queues under.
    attempt_result attempt(std::uint64_t n, const std::string& waiter_id) {
        const auto& s = *shared;
        const auto token = labelled_token(s.label);
        const auto call = acquire_call(token, n, waiter_id);
        std::vector<std::string_view> keys(call.keys.begin(), call.keys.end());
        std::vector<std::string_view> views(call.args.begin(), call.args.end());
        const auto sent_at = s.pool.runtime()->clock().now();  // the lease's clock
        const auto& lua = *call.lua;
        reply r;
        std::size_t acks = 0;
        try {
            if (s.opts.replication.replicas == 0) {
                r = lua.run(s.pool, keys, call.args);
            } else {
                auto c = s.pool.borrow_for(s.key);
                auto rr = run_then_wait(*c, lua, keys, views, s.opts.replication.replicas,
                                        s.opts.replication.timeout);
                r = std::move(rr.result);
                acks = rr.acks;
            }
        } catch (...) {
            detail::rethrow_with_script(lua);
        }
        if (r.is_array() && r.elements().size() == 3 && r.elements()[0].integer() == 1 &&
            acks < s.opts.replication.replicas) {
            // Not durable: a failover could hand these permits out again. Give them back at
            // once and try again after replica_timeout.
            const std::string_view rkeys[] = {s.key, s.waiting_key};
            const std::string_view rargs[] = {token, views[1]};
            try {
                (void)detail::run_known(s, detail::semaphore_release_script(), rkeys, rargs);
            } catch (const error&) {
                // Best effort: the leases end by their TTL.
            }
            attempt_result out;
            out.next_free = s.opts.replication.timeout;
            return out;
        }
        return settle(r, token, n, sent_at);
    }

    // Best effort: a caller that gave up stops holding newcomers back at once (else its entry
    // lapses by itself).
    void leave_queue(const std::string& waiter_id) noexcept {
        try {
            const auto& s = *shared;
            const std::string_view keys[] = {s.key, s.waiting_key, s.queue_key};
            const std::string args[] = {waiter_id};
            (void)detail::semaphore_leave_script().run(s.pool, keys, args);
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
    const bool ok = detail::wait_for_release(
        [this]() -> detail::release_waiter& { return release_waiter(); }, deadline,
        {shared->opts.timing.max_retry_interval, false, shared->opts.timing.retry_jitter},
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

namespace redcoord::detail {

struct semaphore_access {
    static std::shared_ptr<semaphore::impl> impl(semaphore& s) { return s.impl_; }
    static permit make_permit(std::shared_ptr<permit_state> st) { return permit(std::move(st)); }
    static std::shared_ptr<permit_state> state(const permit& p) { return p.state_; }
};

std::shared_ptr<async_operation> start_async_acquire(semaphore& sem, std::uint64_t n,
                                                     milliseconds wait,
                                                     async_completion<permit> done) {
    auto im = semaphore_access::impl(sem);
    const auto& sh = *im->shared;
    validate_cost(n, sh.opts.permits, "semaphore's permits");
    if (wait.count() < 0) throw invalid_argument("async_acquire: wait must be >= 0");
    if (sh.opts.replication.replicas > 0)
        throw invalid_argument("semaphore '" + sh.name +
                               "': async_acquire does not wait for replicas");
    // One token for the whole call: a give-back names the permits the last attempt got.
    auto token = std::make_shared<std::string>(labelled_token(sh.label));
    auto got = std::make_shared<std::shared_ptr<permit_state>>();
    async_wait_spec spec;
    spec.rt = sh.pool.runtime().get();
    spec.where = sh.pool.where();
    spec.waiter = &im->release_waiter();
    spec.deadline = deadline_after(wait);
    spec.policy = {sh.opts.timing.max_retry_interval, false, sh.opts.timing.retry_jitter};
    spec.what = "semaphore '" + sh.name + "'";
    spec.attempt = [im, token, n](const std::string& id) {
        return im->acquire_call(*token, n, id);
    };
    spec.settle = [im, token, n, got](const reply& r, steady::time_point sent_at) {
        auto a = im->settle(r, *token, n, sent_at);
        *got = std::move(a.got);
        return wait_attempt{*got != nullptr, a.next_free};
    };
    spec.leave = [im](const std::string& id) { return im->leave_call(id); };
    spec.give_back = [im, token, n, got] {
        if (*got) {
            std::lock_guard l((*got)->mu);
            (*got)->released = true;
            im->shared->held.add(-static_cast<double>(n));
        }
        got->reset();
        return im->release_call(*token, n);
    };
    const auto started = steady::now();
    return start_async_wait(std::move(spec), [im, got, started, done = std::move(done)](
                                                 const std::exception_ptr& e, bool ok) {
        const auto& s = *im->shared;
        if (e) {
            s.failed.observe_since(started);
            return done(e, std::nullopt);
        }
        if (!ok) {
            s.timed_out.observe_since(started);
            return done(nullptr, std::nullopt);
        }
        s.acquired.observe_since(started);
        done(nullptr, semaphore_access::make_permit(std::move(*got)));
    });
}

namespace {

// The release of one permit over the pipelined link: cancellation ends only the wait for its
// reply (the release is sent regardless).
class async_permit_release final : public async_operation,
                                   public std::enable_shared_from_this<async_permit_release> {
public:
    explicit async_permit_release(async_completion<bool> done) : done_(std::move(done)) {}

    void start(const std::shared_ptr<permit_state>& st) {
        const auto& s = *st->sem;
        const auto cap = s.pool.where().command_timeout;
        exec_script(s.pool.runtime()->link(s.pool.where()),
                    {&semaphore_release_script(),
                     {s.key, s.waiting_key},
                     {st->token, std::to_string(st->n)}},
                    cap.count() > 0 ? steady::now() + cap : steady::time_point::max(),
                    [self = shared_from_this(), n = st->n, what = s.name](link_outcome o) {
                        if (o.result.answered() && !o.result.value->is_error())
                            return self->finish(nullptr, static_cast<std::uint64_t>(
                                                             o.result.value->integer()) == n);
                        if (o.result.answered())
                            return self->finish(reply_exception(o.result.value->text(), "EVALSHA",
                                                                "semaphore '" + what + "'"),
                                                std::nullopt);
                        self->finish(
                            std::make_exception_ptr(outcome_unknown(
                                "semaphore '" + what + "': release reply lost: " + o.result.error)),
                            std::nullopt);
                    });
    }

    void cancel() noexcept override { finish(operation_aborted("async_release"), std::nullopt); }

    // Nothing was held: completes with nullopt.
    void nothing() { finish(nullptr, std::nullopt); }

private:
    void finish(std::exception_ptr e, std::optional<bool> released) {
        async_completion<bool> done;
        {
            std::lock_guard l(mu_);
            if (!done_) return;
            done = std::move(done_);
            done_ = nullptr;
        }
        done(std::move(e), released);
    }

    std::mutex mu_;
    async_completion<bool> done_;
};

}  // namespace

std::shared_ptr<async_operation> start_async_release(permit& p, async_completion<bool> done) {
    auto st = semaphore_access::state(p);
    if (!st) throw invalid_argument("async_release: an empty permit (moved from or default)");
    const auto& ep = st->sem->pool.where();
    require_event_loop_endpoint(ep, "semaphore: async_release");
    auto op = std::make_shared<async_permit_release>(std::move(done));
    st->watchdog.reset();  // outside mu: waits for a tick in progress, which takes mu
    bool send = false;
    {
        std::lock_guard l(st->mu);
        send = !std::exchange(st->released, true);
    }
    if (send) {
        st->sem->held.add(-static_cast<double>(st->n));
        op->start(st);
    } else {
        // Released before: nothing is sent; completes with nullopt, never before this returns.
        boost::asio::post(st->sem->pool.runtime()->io(), [op] { op->nothing(); });
    }
    return op;
}

runtime& runtime_of(permit& p) {
    auto st = semaphore_access::state(p);
    if (!st) throw invalid_argument("async_release: an empty permit (moved from or default)");
    return *st->sem->pool.runtime();
}

runtime& runtime_of(semaphore& sem) { return *semaphore_access::impl(sem)->shared->pool.runtime(); }

}  // namespace redcoord::detail
