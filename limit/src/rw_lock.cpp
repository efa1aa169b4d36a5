#include <redcoord/core/detail/observe.hpp>
#include <redcoord/core/detail/options_check.hpp>
#include <redcoord/core/detail/release_waiter.hpp>
#include <redcoord/core/detail/serial_executor.hpp>
#include <redcoord/core/detail/timer_service.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/holder_label.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/core/token.hpp>
#include <redcoord/limit/detail/async_start.hpp>
#include <redcoord/limit/rw_lock.hpp>

#include "async_wait_loop.hpp"
#include "lease.hpp"
#include "limit_common.hpp"
#include "limit_scripts.hpp"
#include "options_check.hpp"
#include "rw_engine.hpp"

#include <boost/signals2/signal.hpp>

#include <algorithm>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace redcoord {

using std::chrono::milliseconds;
using steady = std::chrono::steady_clock;
using detail::rw_mode;

namespace detail {

void validate(const rw_lock_options& o) {
    require_option(o.timing.ttl >= milliseconds(10), "rw_lock_options", "timing.ttl",
                   "be >= 10 ms (a shorter lease ends before its reply can be trusted)");
    check_timing(o.timing, "rw_lock_options");
}

namespace {

const char* mode_arg(rw_mode m) { return m == rw_mode::read ? "r" : "w"; }
const char* mode_label(rw_mode m) { return m == rw_mode::read ? "read" : "write"; }

}  // namespace

// What the holds need of their lock object.
struct rw_shared {
    rw_shared(connection_pool& p, std::string n, rw_lock_options o)
        : pool(p), name(std::move(n)), opts(std::move(o)) {}
    connection_pool& pool;
    std::string name;
    rw_lock_options opts;
    std::string key = make_key(opts.prefix, "rwlock", name);
    std::string fence_key = make_key(opts.prefix, "rwlock", name, "fence");
    std::string writer_key = make_key(opts.prefix, "rwlock", name, "writer");
    std::string intents_key = make_key(opts.prefix, "rwlock", name, "writers");
    std::string waiting_key = make_key(opts.prefix, "rwlock", name, "waiting");
    std::string channel = make_key(opts.prefix, "rwlock", name, "released");
    std::string label = resolve_holder_label(opts.label);  // in each hold's token
    // Metrics (empty handles when off), by mode: holds here, acquire call durations.
    struct by_mode {
        gauge_handle held;
        histogram_handle acquired, timed_out, failed;
    } read, write;
    counter_handle lost;
    [[nodiscard]] const by_mode& of(rw_mode m) const { return m == rw_mode::read ? read : write; }
};

// One hold (a share or the exclusive hold): its lease, validity and lease timer.
struct rw_hold {
    const rw_shared* sh = nullptr;
    std::function<void(rw_hold&)> report_lost;  // the owner's loss notice
    rw_mode mode = rw_mode::read;
    std::string token;
    std::uint64_t fence = 0;
    std::thread::id thread;  // the thread that took it
    std::mutex mu;
    lease_clock lease;           // guarded by mu
    bool released = false;       // guarded by mu
    std::unique_ptr<timer> dog;  // last: destroyed (and its tick awaited) first

    // Sends the extension; true when extended. Call with mu held.
    bool extend_locked(milliseconds ttl) {
        const auto sent_at = lease.now();
        const auto r =
            rwlock_extend_script().run(sh->pool, {sh->key, sh->writer_key},
                                       {token, mode_arg(mode), std::to_string(ttl.count())});
        return lease.settle(r.integer() == 1, sent_at, ttl);
    }

    // The lease timer's tick: the watchdog's (lease_clock::watchdog_tick), or without it
    // the loss at the validity's end; a loss is reported outside mu.
    std::optional<steady::time_point> tick() {
        std::optional<steady::time_point> next;
        {
            std::lock_guard l(mu);
            if (released || lease.lost) return std::nullopt;
            const auto ttl = sh->opts.timing.ttl;
            if (sh->opts.watchdog)
                next = lease.watchdog_tick(ttl, [&] { return extend_locked(ttl); });
            else if (lease.now() < lease.valid_until)
                next = lease.valid_until;
            else
                lease.lost = true;
            if (!lease.lost) return next;
        }
        report_lost(*this);
        return std::nullopt;
    }

    // Arms the lease timer (the watchdog's first extension, or the validity's end).
    void watch(timer_service& timers) {
        std::lock_guard l(mu);
        if (dog || released) return;
        dog = std::make_unique<timer>(timers, [this] { return tick(); });
        dog->arm(sh->opts.watchdog ? lease.now() + sh->opts.timing.ttl / 3 : lease.valid_until);
    }

    // Releases (once), best effort; true when the lease was still held.
    bool release() noexcept {
        std::unique_ptr<timer> d;
        {
            std::lock_guard l(mu);
            d = std::move(dog);
        }
        d.reset();  // outside mu: waits for a tick in progress, which takes mu
        std::lock_guard l(mu);
        if (released) return false;
        released = true;
        sh->of(mode).held.add(-1);
        try {
            return rwlock_release_script()
                       .run(sh->pool, {sh->key, sh->writer_key, sh->intents_key, sh->waiting_key},
                            {token, mode_arg(mode)})
                       .integer() == 1;
        } catch (...) {
            return false;  // the lease ends by its TTL
        }
    }
};

}  // namespace detail

struct rw_lock::impl {
    detail::rw_shared shared;
    std::shared_ptr<runtime> rt = shared.pool.runtime();

    mutable std::mutex mu;
    std::shared_ptr<detail::rw_hold> writer;                // guarded by mu
    std::vector<std::shared_ptr<detail::rw_hold>> readers;  // guarded by mu, oldest first

    boost::signals2::signal<void(const std::string&)> lost_signal;
    std::mutex waiter_mu;
    std::unique_ptr<detail::release_waiter> waiter;  // guarded by waiter_mu
    // Delivers loss callbacks on the runtime's callback executor, never on the timer thread.
    // Declared last: closed first on destruction.
    std::unique_ptr<detail::strand> notices = std::make_unique<detail::strand>(rt->callbacks());

    explicit impl(detail::rw_shared s) : shared(std::move(s)) {}

    ~impl() {
        notices->close();
        std::vector<std::shared_ptr<detail::rw_hold>> all;
        {
            std::lock_guard l(mu);
            all = std::move(readers);
            if (writer) all.push_back(std::move(writer));
        }
        for (auto& h : all) (void)h->release();
    }

    detail::release_waiter& release_waiter() {
        std::lock_guard l(waiter_mu);
        if (!waiter)
            waiter = std::make_unique<detail::release_waiter>(
                rt, std::vector<endpoint>{shared.pool.where()}, shared.channel);
        return *waiter;
    }

    void report_lost(detail::rw_hold& h) {
        shared.lost.inc();
        rt->emit(log_level::warning, "lock", "rw_lock hold lost",
                 {{"resource", shared.name},
                  {"mode", detail::mode_label(h.mode)},
                  {"fencing_token", std::to_string(h.fence)}});
        auto notify = [this] {
            try {
                lost_signal(shared.name);
            } catch (...) {
                // A throwing callback must not break the other callbacks of this object.
            }
        };
        try {
            notices->post(notify);
        } catch (...) {
            notify();  // no callback thread could start: better late on this thread than never
        }
    }

    struct attempt_result {
        std::shared_ptr<detail::rw_hold> got;
        milliseconds next_free{0};
    };

    // The acquire script's call for `token` in `mode`; `waiter_id` "" for a caller that will
    // not wait.
    [[nodiscard]] detail::script_call acquire_call(rw_mode mode, const std::string& token,
                                                   const std::string& waiter_id) const {
        const auto& s = shared;
        return {
            mode == rw_mode::read ? &detail::rwlock_read_script() : &detail::rwlock_write_script(),
            {s.key, s.fence_key, s.writer_key, s.intents_key, s.waiting_key},
            {token, std::to_string(s.opts.timing.ttl.count()), waiter_id,
             std::to_string(s.opts.timing.max_retry_interval.count()),
             std::to_string(detail::waiter_grace.count())}};
    }

    // The release script's call for `token`'s hold in `mode`.
    [[nodiscard]] detail::script_call release_call(rw_mode mode, const std::string& token) const {
        const auto& s = shared;
        return {&detail::rwlock_release_script(),
                {s.key, s.writer_key, s.intents_key, s.waiting_key},
                {token, detail::mode_arg(mode)}};
    }

    // The leave script's call for `waiter_id`.
    [[nodiscard]] detail::script_call leave_call(const std::string& waiter_id) const {
        return {&detail::rwlock_leave_script(),
                {shared.key, shared.intents_key, shared.waiting_key},
                {waiter_id}};
    }

    // Reads the acquire script's reply to an attempt sent at `sent_at`: on a grant, the hold
    // (its lease started), taken by `thread`.
    // @throws protocol_error for a reply of another shape.
    attempt_result settle(rw_mode mode, const std::string& token, const reply& r,
                          steady::time_point sent_at, std::thread::id thread) {
        if (!r.is_array() || r.elements().size() != 3)
            throw protocol_error("rw_lock acquire: unexpected reply shape");
        const auto& e = r.elements();
        attempt_result out;
        if (e[0].integer() != 1) {
            out.next_free = milliseconds(std::max<std::int64_t>(0, e[1].integer()));
            return out;
        }
        auto h = std::make_shared<detail::rw_hold>();
        h->sh = &shared;
        h->report_lost = [this](detail::rw_hold& lost) { report_lost(lost); };
        h->mode = mode;
        h->token = token;
        h->thread = thread;
        h->fence = static_cast<std::uint64_t>(e[1].integer());
        h->lease.drift_factor = shared.opts.timing.drift_factor;
        h->lease.clock = &shared.pool.runtime()->clock();
        h->lease.start(sent_at, shared.opts.timing.ttl);
        shared.of(mode).held.add(1);
        out.got = std::move(h);
        return out;
    }

    // One attempt; `waiter_id` "" for a caller that will not wait.
    attempt_result attempt(rw_mode mode, const std::string& waiter_id) {
        const auto token = labelled_token(shared.label);
        const auto call = acquire_call(mode, token, waiter_id);
        const std::vector<std::string_view> keys(call.keys.begin(), call.keys.end());
        const auto sent_at = shared.pool.runtime()->clock().now();  // the lease's clock
        reply r;
        try {
            r = call.lua->run(shared.pool, keys, call.args);
        } catch (...) {
            detail::rethrow_with_script(*call.lua);
        }
        return settle(mode, token, r, sent_at, std::this_thread::get_id());
    }

    // Best effort: a caller that gave up withdraws its intent at once (else it lapses).
    void leave_queue(const std::string& waiter_id) noexcept {
        try {
            (void)detail::rwlock_leave_script().run(
                shared.pool, {shared.key, shared.intents_key, shared.waiting_key}, {waiter_id});
        } catch (...) {}
    }

    // The acquire loop (wait_for_release); a waiting writer wakes at least every
    // max_retry_interval to refresh its intent.
    std::shared_ptr<detail::rw_hold> wait_for(rw_mode mode, steady::time_point deadline) {
        std::shared_ptr<detail::rw_hold> got;
        (void)detail::wait_for_release(
            [this]() -> detail::release_waiter& { return release_waiter(); }, deadline,
            {shared.opts.timing.max_retry_interval, mode == rw_mode::write,
             shared.opts.timing.retry_jitter},
            [&](const std::string& waiter_id) {
                auto r = attempt(mode, waiter_id);
                got = std::move(r.got);
                return detail::wait_attempt{got != nullptr, r.next_free};
            },
            [this](const std::string& waiter_id) { leave_queue(waiter_id); });
        return got;
    }

    // Refuses what would wait for itself: a second hold of a thread's exclusive hold, or an
    // exclusive one from a thread holding a share (no upgrade).
    // @throws invalid_argument.
    void check_not_recursive(rw_mode mode) const {
        std::lock_guard l(mu);
        const auto me = std::this_thread::get_id();
        if (writer && writer->thread == me)
            throw invalid_argument("rw_lock '" + shared.name +
                                   "' already held exclusively by this thread (not recursive)");
        // A writer would wait for its own thread's share.
        if (mode == rw_mode::write && std::any_of(readers.begin(), readers.end(),
                                                  [&](const auto& h) { return h->thread == me; }))
            throw invalid_argument("rw_lock '" + shared.name +
                                   "': lock() from a thread that holds a share of it (no "
                                   "upgrade: it would wait for itself)");
    }

    // Records a granted hold in the object and arms its lease timer when needed.
    void commit(rw_mode mode, const std::shared_ptr<detail::rw_hold>& got) {
        bool watch = false;
        {
            std::lock_guard l(mu);
            watch = shared.opts.watchdog || !lost_signal.empty();
            if (mode == rw_mode::write)
                writer = got;
            else
                readers.push_back(got);
        }
        if (watch) got->watch(rt->timers());
    }

    bool acquire(rw_mode mode, steady::time_point deadline) {
        check_not_recursive(mode);
        const auto& m = shared.of(mode);
        const auto started = steady::now();
        std::shared_ptr<detail::rw_hold> got;
        try {
            got = wait_for(mode, deadline);
        } catch (...) {
            m.failed.observe_since(started);
            throw;
        }
        (got ? m.acquired : m.timed_out).observe_since(started);
        if (!got) return false;
        commit(mode, got);
        return true;
    }

    // Takes one hold out of the object: the writer, or the calling thread's latest share
    // (else the latest).
    std::shared_ptr<detail::rw_hold> take(rw_mode mode) {
        std::lock_guard l(mu);
        if (mode == rw_mode::write) return std::move(writer);
        if (readers.empty()) return nullptr;
        auto it = std::find_if(readers.rbegin(), readers.rend(), [](const auto& h) {
            return h->thread == std::this_thread::get_id();
        });
        auto pos = it == readers.rend() ? std::prev(readers.end()) : std::prev(it.base());
        auto h = std::move(*pos);
        readers.erase(pos);
        return h;
    }

    std::vector<std::shared_ptr<detail::rw_hold>> all_holds() const {
        std::lock_guard l(mu);
        auto all = readers;
        if (writer) all.push_back(writer);
        return all;
    }
};

rw_lock::rw_lock(connection_pool& pool, std::string name, rw_lock_options opts) {
    detail::validate_limit_name(name, "rw_lock name");
    detail::validate(opts);
    detail::rw_shared s{pool, std::move(name), std::move(opts)};
    if (const detail::metrics_scope ms(*pool.runtime()); ms) {
        using detail::metric;
        const auto n = ms.name(s.name);
        for (auto mode : {rw_mode::read, rw_mode::write}) {
            auto& m = mode == rw_mode::read ? s.read : s.write;
            const std::string md = detail::mode_label(mode);
            m.held = ms.gauge(metric::rwlock_holds, {{"name", n}, {"mode", md}});
            m.acquired = ms.histogram(metric::rwlock_acquire_seconds,
                                      {{"name", n}, {"mode", md}, {"outcome", "acquired"}});
            m.timed_out = ms.histogram(metric::rwlock_acquire_seconds,
                                       {{"name", n}, {"mode", md}, {"outcome", "timeout"}});
            m.failed = ms.histogram(metric::rwlock_acquire_seconds,
                                    {{"name", n}, {"mode", md}, {"outcome", "error"}});
        }
        s.lost = ms.counter(metric::lock_lost_total, {{"kind", "rw_lock"}, {"name", n}});
    }
    impl_ = std::make_unique<impl>(std::move(s));
}

rw_lock::~rw_lock() = default;

void rw_lock::lock() { (void)lock_until(forever()); }
bool rw_lock::try_lock() { return lock_until(steady::now()); }
bool rw_lock::lock_until(steady::time_point deadline) {
    return impl_->acquire(rw_mode::write, deadline);
}

void rw_lock::lock_shared() { (void)lock_shared_until(forever()); }
bool rw_lock::try_lock_shared() { return lock_shared_until(steady::now()); }
bool rw_lock::lock_shared_until(steady::time_point deadline) {
    return impl_->acquire(rw_mode::read, deadline);
}

void rw_lock::unlock() {
    auto h = impl_->take(rw_mode::write);
    if (!h) throw invalid_argument("rw_lock '" + name() + "': unlock() without the exclusive hold");
    (void)h->release();
}

void rw_lock::unlock_shared() {
    auto h = impl_->take(rw_mode::read);
    if (!h) throw invalid_argument("rw_lock '" + name() + "': unlock_shared() without a share");
    (void)h->release();
}

bool rw_lock::owns_lock() const {
    std::lock_guard l(impl_->mu);
    return impl_->writer != nullptr;
}

std::size_t rw_lock::shared_count() const {
    std::lock_guard l(impl_->mu);
    return impl_->readers.size();
}

std::uint64_t rw_lock::fencing_token() const {
    std::lock_guard l(impl_->mu);
    return impl_->writer ? impl_->writer->fence : 0;
}

std::uint64_t rw_lock::shared_fencing_token() const {
    std::lock_guard l(impl_->mu);
    const auto& rs = impl_->readers;
    if (rs.empty()) return 0;
    const auto it = std::find_if(rs.rbegin(), rs.rend(), [](const auto& h) {
        return h->thread == std::this_thread::get_id();
    });
    return (it == rs.rend() ? rs.back() : *it)->fence;
}

std::chrono::steady_clock::time_point rw_lock::valid_until() const {
    std::optional<steady::time_point> until;
    for (const auto& h : impl_->all_holds()) {
        std::lock_guard l(h->mu);
        until = std::min(until.value_or(h->lease.valid_until), h->lease.valid_until);
    }
    return until.value_or(steady::time_point{});
}

bool rw_lock::lost() const {
    for (const auto& h : impl_->all_holds()) {
        std::lock_guard l(h->mu);
        if (h->lease.lost || h->lease.now() >= h->lease.valid_until) return true;
    }
    return false;
}

bool rw_lock::extend(milliseconds ttl) {
    if (ttl < milliseconds(10)) throw invalid_argument("rw_lock::extend: ttl must be >= 10 ms");
    bool all = true;
    for (const auto& h : impl_->all_holds()) {
        bool lost_now = false;
        {
            std::lock_guard l(h->mu);
            if (h->released || h->lease.lost) {
                all = all && !h->lease.lost;
                continue;
            }
            lost_now = !h->extend_locked(ttl);
        }
        if (lost_now) {
            all = false;
            impl_->report_lost(*h);
        }
    }
    return all;
}

bool rw_lock::extend() { return extend(impl_->shared.opts.timing.ttl); }

boost::signals2::scoped_connection rw_lock::on_lost(const lost_slot& slot) {
    boost::signals2::scoped_connection c = impl_->lost_signal.connect(slot);
    for (const auto& h : impl_->all_holds()) h->watch(impl_->rt->timers());
    return c;
}

const std::string& rw_lock::name() const noexcept { return impl_->shared.name; }

const rw_lock_options& rw_lock::options() const noexcept { return impl_->shared.opts; }

}  // namespace redcoord

namespace redcoord::detail {

struct rw_lock_access {
    static rw_lock::impl& impl(rw_lock& l) { return *l.impl_; }
};

std::shared_ptr<async_operation> start_async_lock(rw_lock& lock, bool exclusive, milliseconds wait,
                                                  async_completion<std::uint64_t> done) {
    auto* im = &rw_lock_access::impl(lock);
    const auto mode = exclusive ? rw_mode::write : rw_mode::read;
    const char* what = exclusive ? "async_lock" : "async_lock_shared";
    if (wait.count() < 0) throw invalid_argument(std::string(what) + ": wait must be >= 0");
    im->check_not_recursive(mode);
    // The hold belongs to the initiating thread, as lock()'s to its caller.
    const auto me = std::this_thread::get_id();
    auto token = std::make_shared<std::string>(labelled_token(im->shared.label));
    auto got = std::make_shared<std::shared_ptr<rw_hold>>();
    async_wait_spec spec;
    spec.rt = im->rt.get();
    spec.where = im->shared.pool.where();
    spec.waiter = &im->release_waiter();
    spec.deadline = deadline_after(wait);
    // A waiting writer wakes at least every max_retry_interval to refresh its intent.
    spec.policy = {im->shared.opts.timing.max_retry_interval, exclusive,
                   im->shared.opts.timing.retry_jitter};
    spec.what = "rw_lock '" + im->shared.name + "'";
    spec.attempt = [im, mode, token](const std::string& id) {
        return im->acquire_call(mode, *token, id);
    };
    spec.settle = [im, mode, token, got, me](const reply& r, steady::time_point sent_at) {
        auto a = im->settle(mode, *token, r, sent_at, me);
        *got = std::move(a.got);
        return wait_attempt{*got != nullptr, a.next_free};
    };
    spec.leave = [im](const std::string& id) { return im->leave_call(id); };
    spec.give_back = [im, mode, token, got] {
        if (*got) im->shared.of(mode).held.add(-1);
        got->reset();
        return im->release_call(mode, *token);
    };
    const auto started = steady::now();
    return start_async_wait(std::move(spec), [im, mode, got, started, done = std::move(done)](
                                                 const std::exception_ptr& e, bool ok) {
        const auto& m = im->shared.of(mode);
        if (e) {
            m.failed.observe_since(started);
            return done(e, std::nullopt);
        }
        if (!ok) {
            m.timed_out.observe_since(started);
            return done(nullptr, std::nullopt);
        }
        m.acquired.observe_since(started);
        const auto fence = (*got)->fence;
        im->commit(mode, *got);
        done(nullptr, fence);
    });
}

runtime& runtime_of(rw_lock& lock) { return *rw_lock_access::impl(lock).rt; }

}  // namespace redcoord::detail
