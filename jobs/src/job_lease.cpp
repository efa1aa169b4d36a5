#include "job_lease.hpp"

#include <algorithm>

namespace redcoord::detail {

job_lease::job_lease(std::chrono::milliseconds lease, time_point claim_sent,
                     double drift_factor) noexcept
    : schedule_(lease, drift_factor), until_(schedule_.valid_until(claim_sent)) {}

std::chrono::microseconds job_lease::margin(std::chrono::milliseconds lease,
                                            double drift_factor) noexcept {
    return lease_schedule(lease, drift_factor).drift();
}

void job_lease::renewed(time_point sent, time_point now) noexcept {
    if (gone(now)) return;
    until_ = std::max(until_, schedule_.valid_until(sent));
}

bool job_lease::gone(time_point now) noexcept {
    if (!gone_ && now >= until_) gone_ = true;
    return gone_;
}

}  // namespace redcoord::detail
