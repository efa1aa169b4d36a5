#pragma once
/// @file
/// The clock behind a runtime's timers and its primitives' lease, validity and term math: the
/// steady clock, plus an offset that only a test moves forward.

#include <redcoord/core/export.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord {

/// The time a runtime decides by: `std::chrono::steady_clock::now()` plus an offset that starts
/// at zero and that advance() alone moves, forward only.
///
/// Every object of a runtime reads this clock for its decisions about time: the watchdog's
/// renewal at a third of the TTL and the validity it trusts (distributed_lock, redlock,
/// fair_lock, semaphore, rw_lock), the elector's rounds and the end of its term
/// (leader_elector, master_selector), the reliable queue consumer's and the job worker's
/// heartbeats and lease bounds, the double barrier's heartbeat, and the timer service that
/// runs all of them. The time points these objects hand out (lock_acquisition::valid_until,
/// leader_elector::deadline(), job_context::held_until(), ...) are on this clock too. A test that calls advance() therefore makes those decisions come due
/// at once, without sleeping: a watchdog extends, a lease ends by this side's clock and the
/// holder is told, a leader steps down.
///
/// What advance() does not move, on purpose:
/// - **Redis's own clock.** A key's TTL runs on the server: after `advance(ttl)` the holder
///   considers its lease over while the key still lives on the server. That is the safe side
///   (a holder gives up early, never late), and is what the tests check.
/// - **I/O timing**: command and connect timeouts, reconnect back-offs, and the waits a caller
///   asks for (`try_lock_for`, `async_acquire(wait)`) stay on the steady clock, so an advance
///   never makes a command time out. Two exceptions, where an engine weighs the caller's wait
///   against a lease it keeps, take the wait onto this clock when the call starts, so an
///   advance during the wait shortens it: the fair lock's acquire and the reliable queue's
///   pop (`pop(timeout)`, `async_pop`).
///
/// Time keeps running after an advance (this is not a frozen clock): a frozen clock would make
/// a loop that waits in real time for a deadline on this clock wait forever.
///
/// In production nothing calls advance(), the offset stays zero, and now() costs one relaxed
/// atomic load beyond the steady clock's.
///
/// Thread-safety: every member function may be called from any thread.
class runtime_clock {
public:
    /// The steady clock's duration (nanoseconds).
    using duration = std::chrono::steady_clock::duration;
    /// A steady-clock time point: the clocks differ by offset() only.
    using time_point = std::chrono::steady_clock::time_point;

    /// A clock that reads the steady clock (offset zero).
    runtime_clock() = default;
    runtime_clock(const runtime_clock&) = delete;
    runtime_clock& operator=(const runtime_clock&) = delete;

    /// The steady clock's time plus offset().
    [[nodiscard]] time_point now() const noexcept {
        return std::chrono::steady_clock::now() + offset();
    }
    /// How far advance() has moved this clock in all (zero unless a test moved it).
    [[nodiscard]] duration offset() const noexcept {
        return duration(offset_.load(std::memory_order_acquire));
    }
    /// The steady clock's time at which this clock reads `t`, given the offset now (a later
    /// advance() brings that instant nearer). For waits on primitives of the steady clock.
    [[nodiscard]] time_point to_steady(time_point t) const noexcept;
    /// What this clock reads at the steady clock's instant `t`, given the offset now: a
    /// caller's deadline, for an engine that weighs it against this clock's times.
    [[nodiscard]] time_point from_steady(time_point t) const noexcept;

    /// Moves this clock forward by `by` (any duration convertible to `duration`) and wakes the
    /// runtime's timers, whose due times this brings nearer: a timer now due runs at once.
    /// Meant for tests of the runtime's objects (their drivers' decisions without sleeping).
    /// @throws invalid_argument when `by` is negative (the clock never goes back).
    void advance(duration by);

    /// Calls `wake` (which must not throw, and must not call advance()) after every later
    /// advance(), until the returned registration is passed to forget_advance(). Internal: the
    /// timer service's wake-up.
    std::uint64_t on_advance(std::function<void()> wake);
    /// Ends a registration of on_advance(); after it returns `wake` is not called any more.
    void forget_advance(std::uint64_t registration) noexcept;

private:
    std::atomic<duration::rep> offset_{0};
    std::mutex mu_;  // the listeners, and advance() calling them one advance at a time
    std::vector<std::pair<std::uint64_t, std::function<void()>>> listeners_;
    std::uint64_t next_registration_ = 1;
};

}  // namespace redcoord

REDCOORD_API_END
