#pragma once
// The holding of a lock object and its lifecycle (commit, extension bookkeeping, lease timer,
// loss), and the local gate; lock_core adds the rounds.

#include "lock_engine.hpp"
#include "watchdog.hpp"

#include <redcoord/core/deadline.hpp>
#include <redcoord/core/detail/observe.hpp>
#include <redcoord/core/detail/serial_executor.hpp>
#include <redcoord/core/detail/thread_annotations.hpp>
#include <redcoord/lock/acquisition.hpp>

#include <boost/signals2/signal.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

namespace redcoord::detail {

// Serialises the threads of this process that share one lock object (one holder per object),
// without tying the hold to a thread: release() may come from another thread than acquire().
class local_gate {
public:
    // Waits until free or `deadline`; false on timeout.
    // @throws invalid_argument when the calling thread already holds the gate (not recursive).
    bool enter(std::chrono::steady_clock::time_point deadline);
    // Enters when free, without waiting (an asynchronous acquire, which has no thread to
    // block); false when busy.
    bool try_enter() noexcept;
    void leave() noexcept;

private:
    std::mutex mu_;
    std::condition_variable cv_;
    bool busy_ = false;
    std::thread::id owner_;
};

// What a lock object knows about its resource and its current holding, and its lifecycle:
// commit, extension bookkeeping, the lease timer (watchdog and loss notice) and loss reporting.
struct hold_state {
    struct lease_settings {
        std::chrono::milliseconds ttl;
        double drift_factor;
        bool watchdog;
        std::size_t max_extensions;
    };
    // @throws invalid_argument for a bad resource name.
    hold_state(std::string resource, std::string_view kind, std::string_view prefix,
               lease_settings lease);
    virtual ~hold_state() = default;

    std::string resource;
    std::string_view kind;  // "lock", "redlock" or "fair lock" (a literal), for messages
    std::string key;
    // The keys made from `key`: views into one buffer of this object, set by the constructor
    // (a service may keep a lock object per entity, so they share one allocation).
    std::string_view fence_key, channel;
    std::string_view turn_key, waiting_key;  // bounded unfairness (scripts.hpp)
    std::string_view fair_queue_key;         // fair_lock's FIFO of waiter ids (fair_scripts.hpp)
    lease_settings lease;

    local_gate gate;
    // The deadline of the acquire call that holds the gate (only the gate holder touches it).
    std::chrono::steady_clock::time_point attempt_deadline{};
    bool attempt_timed = false;  // that deadline was still ahead when the call entered
    mutable detail::mutex mu;    // guards the holding below (and what a derived state adds to it)
    std::optional<lock_acquisition> held REDCOORD_GUARDED_BY(mu);
    std::uint64_t hold_id REDCOORD_GUARDED_BY(mu) = 0;
    std::size_t extensions REDCOORD_GUARDED_BY(mu) = 0;
    bool lost_flag REDCOORD_GUARDED_BY(mu) = false;
    // The on_lost() slots, made at the first on_lost() (a signal costs each object about 200
    // bytes, and most never get a slot); never reset before the object goes.
    using lost_signal = boost::signals2::signal<void(const std::string&)>;
    std::unique_ptr<lost_signal> lost_slots REDCOORD_GUARDED_BY(mu);
    // The runtime whose timer thread runs the lease timer (set by the owner before any commit;
    // empty: the process's); declared first so it outlives the timer.
    std::shared_ptr<redcoord::runtime> rt;
    // The lease timer; the owner resets it first on destruction (it calls back in).
    std::unique_ptr<watchdog> dog;
    // Delivers the loss callbacks on the runtime's callback executor, never on the timer thread
    // that finds the loss (a slow slot would hold up every other object's timers there).
    // Created on the first loss; declared after what its tasks use, so it closes first.
    std::unique_ptr<strand> notices REDCOORD_GUARDED_BY(mu);

    // Metrics of this object, resolved once; none when metrics are off (most objects: the
    // handles would cost each of them 80 bytes).
    struct observer {
        histogram_handle acquired, timed_out, failed;  // redcoord_lock_acquire_seconds by outcome
        counter_handle lost;                           // redcoord_lock_lost_total
        counter_handle quorum_failures;  // redcoord_redlock_quorum_failures_total (redlock)
    };
    std::unique_ptr<const observer> obs;
    // Resolves `obs` from the runtime's backend (call once `rt` is set), `metric_kind` being
    // the label: lock, fair_lock or redlock.
    void observe_as(std::string_view metric_kind);
    // Runs an acquire call `f` and observes its duration under its outcome (an engaged
    // optional: acquired; empty: timeout; an exception: error).
    template <class F>
    auto timed_acquire(F&& f) -> decltype(f()) {
        if (!obs) return f();  // metrics off: not even a clock read
        const auto t0 = std::chrono::steady_clock::now();
        try {
            auto r = f();
            (r ? obs->acquired : obs->timed_out).observe_since(t0);
            return r;
        } catch (...) {
            obs->failed.observe_since(t0);
            throw;
        }
    }

    // One extension round to `ttl` from its start `t0` (taken before anything is sent).
    // Returns extended only when confirmed.
    virtual extend_result extend_round(const std::string& token, std::chrono::milliseconds ttl,
                                       std::chrono::steady_clock::time_point t0) = 0;

    // Makes `a` the current holding and arms the lease timer when it has work (watchdog on,
    // or a loss handler to notify when the validity ends). The timer is started before the
    // holding is recorded, so a failure to start it leaves nothing held.
    void commit_hold(lock_acquisition a);
    // Extends the current holding (hold `expected` when given) to `ttl`: the budget, the
    // validity check, the round, and the validity bookkeeping of every outcome.
    extend_result extend_hold(std::optional<std::uint64_t> expected, std::chrono::milliseconds ttl);
    // Sets lost() for hold `id` and has the loss callback fired once, on the runtime's callback
    // executor (this object's strand); counts and logs it (`why`).
    void mark_lost(std::uint64_t id, std::string_view why);
    // A loss handler was connected: make sure the end of the current validity is reported.
    void arm_loss_notice();
    // on_lost() of the lock classes: connects `h` and arms the loss notice.
    [[nodiscard]] boost::signals2::scoped_connection connect_lost(
        const std::function<void(const std::string&)>& h);
    // For the owner's destructor, first: joins the lease timer and the loss callbacks (a
    // running one is waited for, pending ones are dropped), since both reach into the object.
    void stop_lease_work() noexcept;
    // Clears the local holding and stops the lease timer; nullopt when nothing was held.
    std::optional<lock_acquisition> take_hold();

    [[nodiscard]] bool lost() const;
    // The time of the holding's validity and lease timer: the runtime's clock (runtime_clock;
    // the steady clock unless a test advanced it). Caller waits stay on the steady clock.
    [[nodiscard]] std::chrono::steady_clock::time_point lease_now() const;
    // The runtime clock itself, for an engine that weighs a caller's (steady) deadline
    // against it (the fair lock's) and for waits on steady primitives until its times.
    [[nodiscard]] const runtime_clock& lease_clock() const;
    [[nodiscard]] bool is_held() const;
    [[nodiscard]] std::optional<lock_acquisition> current() const;
    // @throws lock_lost when nothing is held.
    [[nodiscard]] std::uint64_t fencing_token() const;
    // @throws lock_lost when nothing is held, or the holding expired or was taken over.
    void check_held() const;

private:
    std::string derived_keys_;  // what fence_key, channel and the other views above show
    std::unique_ptr<watchdog> make_dog();
    std::chrono::steady_clock::time_point valid_until_after(
        std::chrono::steady_clock::time_point t0, std::chrono::milliseconds ttl) const;
    // The lease timer's work for hold `id`; the next due time, or nullopt to stop.
    std::optional<std::chrono::steady_clock::time_point> lease_tick(std::uint64_t id);
    // The first due time of the timer for a holding valid until `until`.
    [[nodiscard]] std::optional<std::chrono::steady_clock::time_point> first_due(
        std::chrono::steady_clock::time_point until) const REDCOORD_REQUIRES(mu);
};

}  // namespace redcoord::detail
