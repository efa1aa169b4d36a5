#pragma once
// Small pieces shared by distributed_lock and redlock.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
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

// A deadline far enough away to mean "forever" without overflowing clock arithmetic.
std::chrono::steady_clock::time_point forever();

// Random delay in [0, jitter], microsecond resolution.
std::chrono::microseconds jitter(std::chrono::milliseconds upto);

// Random back-off after `losses` consecutive lost races for a just-released lock: uniform in
// [0, min(cap, 250 us * 2^(losses - 1))]; zero for no loss or a zero cap. It bounds how often
// a waiter that keeps losing to a re-acquiring holder tries (no herd on every release).
std::chrono::microseconds contention_backoff(unsigned losses, std::chrono::milliseconds cap);

// Milliseconds as the decimal text Redis expects.
std::string ms_arg(std::chrono::milliseconds d);

}  // namespace redcoord::detail
