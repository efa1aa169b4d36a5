#pragma once
// The lease timer of one lock object: the watchdog of lock_options::watchdog (Redisson's
// lockWatchdog) and the loss notice at the end of a validity that was not extended. While a
// hold is armed it calls `tick(hold)` at the due time; tick returns when to call it next, or
// nullopt to stop for that hold. The ticks run on the runtime's timer thread (shared by every
// lock, elector and queue of the runtime): a lock object owns no thread.

#include <redcoord/core/detail/timer_service.hpp>
#include <redcoord/core/runtime.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

namespace redcoord::detail {

class watchdog {
public:
    using time_point = std::chrono::steady_clock::time_point;
    // tick(hold) serves the hold identified by `hold` and returns its next due time.
    watchdog(std::shared_ptr<redcoord::runtime> rt,
             std::function<std::optional<time_point>(std::uint64_t hold)> tick);
    // The same on the process's shared runtime.
    explicit watchdog(std::function<std::optional<time_point>(std::uint64_t hold)> tick);
    // Disarms and waits for a tick in progress (bounded by its command timeout).
    ~watchdog() = default;
    watchdog(const watchdog&) = delete;
    watchdog& operator=(const watchdog&) = delete;

    // Serves `hold` from `due` on (replacing any previous hold).
    // @throws std::system_error when the timer thread cannot be started (nothing is armed then).
    void arm(std::uint64_t hold, time_point due);
    // Stops serving; does not wait for a tick in progress (the tick re-checks its hold).
    void disarm() noexcept;

private:
    std::shared_ptr<redcoord::runtime> rt_;  // outlives timer_
    std::function<std::optional<time_point>(std::uint64_t)> tick_;
    std::atomic<std::uint64_t> hold_{0};
    timer timer_;
};

}  // namespace redcoord::detail
