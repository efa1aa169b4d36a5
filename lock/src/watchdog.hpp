#pragma once
// The lease timer of one lock object: the watchdog of lock_options::watchdog (Redisson's
// lockWatchdog, seed 002) and the loss notice at the end of a validity that was not extended.
// While a hold is armed it calls `tick(hold)` at the due time; tick returns when to call it
// next, or nullopt to stop for that hold. One thread per lock object, started on first arm,
// idle between holds, joined by the destructor.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

namespace redcoord::detail {

class watchdog {
public:
    using time_point = std::chrono::steady_clock::time_point;
    // tick(hold) serves the hold identified by `hold` and returns its next due time.
    explicit watchdog(std::function<std::optional<time_point>(std::uint64_t hold)> tick);
    // Stops and joins; a tick in progress finishes first (bounded by its command timeout).
    ~watchdog();
    watchdog(const watchdog&) = delete;
    watchdog& operator=(const watchdog&) = delete;

    // Serves `hold` from `due` on (replacing any previous hold).
    // @throws std::system_error when the thread cannot be started (nothing is armed then).
    void arm(std::uint64_t hold, time_point due);
    // Stops serving; does not wait for a tick in progress (the tick re-checks its hold).
    void disarm() noexcept;

private:
    void run();

    std::function<std::optional<time_point>(std::uint64_t)> tick_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool stop_ = false;
    bool armed_ = false;
    std::uint64_t hold_ = 0;
    time_point due_{};
    std::thread thread_;
};

}  // namespace redcoord::detail
