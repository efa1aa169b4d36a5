#pragma once
// Small pieces shared by distributed_lock and redlock.

#include "watchdog.hpp"

#include <redcoord/core/deadline.hpp>
#include <redcoord/lock/acquisition.hpp>

#include <boost/signals2/signal.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <memory>
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
    void leave() noexcept;

private:
    std::mutex mu_;
    std::condition_variable cv_;
    bool busy_ = false;
    std::thread::id owner_;
};

// Random delay in [0, jitter], microsecond resolution.
std::chrono::microseconds jitter(std::chrono::milliseconds upto);

// Random back-off after `losses` consecutive lost races for a just-released lock: uniform in
// [0, min(cap, 250 us * 2^(losses - 1))]; zero for no loss or a zero cap. It bounds how often
// a waiter that keeps losing to a re-acquiring holder tries (no herd on every release).
std::chrono::microseconds contention_backoff(unsigned losses, std::chrono::milliseconds cap);

// Milliseconds as the decimal text Redis expects.
std::string ms_arg(std::chrono::milliseconds d);

// What a lock object knows about its resource and its current holding; the base of both
// distributed_lock's and redlock's state, so their accessors are one piece of code.
struct hold_state {
    // @throws invalid_argument for a bad resource name.
    hold_state(std::string resource, std::string_view kind, std::string_view prefix, std::chrono::milliseconds ttl);

    std::string resource;
    std::string kind;  // "lock" or "redlock", for messages
    std::string key, fence_key, channel, ttl_arg;

    local_gate gate;
    mutable std::mutex mu;  // guards the holding below (and what a derived state adds to it)
    std::optional<lock_acquisition> held;
    std::uint64_t hold_id = 0;
    std::size_t extensions = 0;
    bool lost_flag = false;
    boost::signals2::signal<void(const std::string&)> lost_signal;
    // The opt-in renewal thread; the owner resets it first on destruction (it calls back in).
    std::unique_ptr<watchdog> dog;

    // Clears the local holding and stops renewing it; nullopt when nothing was held.
    std::optional<lock_acquisition> take_hold();

    [[nodiscard]] bool lost() const;
    [[nodiscard]] bool is_held() const;
    [[nodiscard]] std::optional<lock_acquisition> current() const;
    // @throws lock_lost when nothing is held.
    [[nodiscard]] std::uint64_t fencing_token() const;
    // @throws lock_lost when nothing is held, or the holding expired or was taken over.
    void check_held() const;
};

}  // namespace redcoord::detail
