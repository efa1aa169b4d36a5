#pragma once
// The lease-extension thread behind lock_options::watchdog (Redisson's lockWatchdog, seed
// 002), shared by distributed_lock and redlock: while a hold is armed it calls `tick` every
// `period`; `tick` returns false to stop for this hold. One thread per lock object, started
// on first use, idle between holds, joined by the destructor.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

namespace redcoord::detail {

class watchdog {
public:
    // tick(hold) extends the hold identified by `hold`; false ends the hold's ticking.
    explicit watchdog(std::function<bool(std::uint64_t hold)> tick);
    // Stops and joins; a tick in progress finishes first (bounded by its command timeout).
    ~watchdog();
    watchdog(const watchdog&) = delete;
    watchdog& operator=(const watchdog&) = delete;

    // Starts ticking for `hold` every `period` (replacing any previous hold).
    void arm(std::uint64_t hold, std::chrono::milliseconds period);
    // Stops ticking; does not wait for a tick in progress (the tick re-checks its hold).
    void disarm() noexcept;

private:
    void run();

    std::function<bool(std::uint64_t)> tick_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool stop_ = false;
    bool armed_ = false;
    std::uint64_t hold_ = 0;
    std::chrono::milliseconds period_{0};
    std::thread thread_;
};

}  // namespace redcoord::detail
