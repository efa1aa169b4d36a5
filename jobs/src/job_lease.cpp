#include "job_lease.hpp"

#include <algorithm>

namespace redcoord::detail {

job_lease::job_lease(std::chrono::milliseconds lease, time_point claim_sent,
                     double drift_factor) noexcept
    : lease_(lease), margin_(margin(lease, drift_factor)), until_(claim_sent + lease_ - margin_) {}

std::chrono::microseconds job_lease::margin(std::chrono::milliseconds lease,
                                            double drift_factor) noexcept {
    const double us = static_cast<double>(lease.count()) * 1000.0 * drift_factor;
    return std::chrono::microseconds(static_cast<std::chrono::microseconds::rep>(us) + 2000);
}

void job_lease::renewed(time_point sent, time_point now) noexcept {
    if (gone(now)) return;
    until_ = std::max(until_, sent + lease_ - margin_);
}

bool job_lease::gone(time_point now) noexcept {
    if (!gone_ && now >= until_) gone_ = true;
    return gone_;
}

}  // namespace redcoord::detail
