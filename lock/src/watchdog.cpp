#include "watchdog.hpp"

namespace redcoord::detail {

watchdog::watchdog(std::function<std::optional<time_point>(std::uint64_t)> tick) : tick_(std::move(tick)) {}

watchdog::~watchdog() {
    {
        std::lock_guard l(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void watchdog::arm(std::uint64_t hold, time_point due) {
    {
        std::lock_guard l(mu_);
        if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
        armed_ = true;
        hold_ = hold;
        due_ = due;
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
        const auto due = due_;
        // Wake early only when stopped, disarmed or re-armed.
        if (cv_.wait_until(l, due, [&] { return stop_ || !armed_ || hold_ != hold || due_ != due; })) continue;
        l.unlock();
        std::optional<time_point> next;
        try {
            next = tick_(hold);
        } catch (...) {
            next.reset();  // tick reports failures itself; never let one kill the thread
        }
        l.lock();
        if (hold_ != hold || due_ != due) continue;  // re-armed meanwhile
        if (next) due_ = *next;
        else armed_ = false;
    }
}

}  // namespace redcoord::detail
