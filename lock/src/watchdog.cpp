#include "watchdog.hpp"

namespace redcoord::detail {

watchdog::watchdog(std::shared_ptr<redcoord::runtime> rt,
                   std::function<std::optional<time_point>(std::uint64_t)> tick)
    : rt_(rt ? std::move(rt) : redcoord::runtime::shared()), tick_(std::move(tick)),
      timer_(rt_->timers(), [this]() -> std::optional<time_point> { return tick_(hold_.load()); }) {
}

watchdog::watchdog(std::function<std::optional<time_point>(std::uint64_t)> tick)
    : watchdog(nullptr, std::move(tick)) {}

void watchdog::arm(std::uint64_t hold, time_point due) {
    // The hold is read by the tick after arm() returns: a tick of the old hold already
    // running ignores its own result (the timer's arm during a tick overrides it).
    hold_.store(hold);
    timer_.arm(due);
}

void watchdog::disarm() noexcept { timer_.disarm(); }

}  // namespace redcoord::detail
