#include <redcoord/core/errors.hpp>
#include <redcoord/core/runtime_clock.hpp>

#include <algorithm>
#include <utility>

namespace redcoord {

runtime_clock::time_point runtime_clock::to_steady(time_point t) const noexcept {
    // The ends of the range stay where they are: "never" must not wrap into the past.
    if (t == time_point::max() || t == time_point::min()) return t;
    return t - offset();
}

runtime_clock::time_point runtime_clock::from_steady(time_point t) const noexcept {
    if (t == time_point::max() || t == time_point::min()) return t;
    return t + offset();
}

void runtime_clock::advance(duration by) {
    if (by < duration::zero())
        throw invalid_argument("runtime_clock::advance: a negative duration");
    // Under mu_, so that two advances wake the listeners in the order they moved the clock and
    // forget_advance() can promise that its listener is not running.
    std::lock_guard l(mu_);
    offset_.fetch_add(by.count(), std::memory_order_acq_rel);
    for (auto& entry : listeners_) entry.second();
}

std::uint64_t runtime_clock::on_advance(std::function<void()> wake) {
    std::lock_guard l(mu_);
    const auto id = next_registration_++;
    listeners_.emplace_back(id, std::move(wake));
    return id;
}

void runtime_clock::forget_advance(std::uint64_t registration) noexcept {
    std::lock_guard l(mu_);
    std::erase_if(listeners_, [&](const auto& entry) { return entry.first == registration; });
}

}  // namespace redcoord
