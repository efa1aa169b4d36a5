#include "watchdog.hpp"

namespace redcoord::detail {

watchdog::watchdog(std::function<bool(std::uint64_t)> tick) : tick_(std::move(tick)) {}

watchdog::~watchdog() {
    {
        std::lock_guard l(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void watchdog::arm(std::uint64_t hold, std::chrono::milliseconds period) {
    {
        std::lock_guard l(mu_);
        armed_ = true;
        hold_ = hold;
        period_ = period;
        if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
    }
    cv_.notify_all();
}

void watchdog::disarm() noexcept {
    {
        std::lock_guard l(mu_);
        armed_ = false;
    }
    cv_.notify_all();
}

void watchdog::run() {
    std::unique_lock l(mu_);
    while (!stop_) {
        if (!armed_) {
            cv_.wait(l, [&] { return stop_ || armed_; });
            continue;
        }
        const auto hold = hold_;
        const auto due = std::chrono::steady_clock::now() + period_;
        // Wake early only when stopped or re-armed for another hold.
        if (cv_.wait_until(l, due, [&] { return stop_ || !armed_ || hold_ != hold; })) continue;
        l.unlock();
        bool again = false;
        try {
            again = tick_(hold);
        } catch (...) {
            again = false;  // tick reports failures itself; never let one kill the thread
        }
        l.lock();
        if (!again && hold_ == hold) armed_ = false;
    }
}

}  // namespace redcoord::detail
