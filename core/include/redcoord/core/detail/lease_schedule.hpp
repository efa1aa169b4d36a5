#pragma once
/// @file
/// The lease arithmetic every holder of redcoord shares: a lock's holding and its watchdog, a
/// fair-lock waiter's place, a queue consumer's registration, a job's claim, a barrier
/// member's arrival. Internal to redcoord; not a stable API.

#include <redcoord/core/export.hpp>
#include <redcoord/core/options.hpp>

#include <algorithm>
#include <chrono>

REDCOORD_API_BEGIN
namespace redcoord::detail {

/// One lease length and its clock drift allowance, and what follows from them.
///
/// The server sets a lease's end to "its now + ttl" when the command that takes or renews the
/// lease runs, which is after this side sent it. So, while the two clocks advance at nearly the
/// same rate, the lease cannot end in Redis before `sent + ttl` by this side's steady clock; the
/// drift allowance covers the rate difference (the Redlock page, "Safety arguments":
/// `ttl * drift_factor + 2 ms`, clock_drift()). A holder therefore trusts a lease until
/// `sent + ttl - drift`, measured from when the request was *sent*, never from its reply, so a
/// slow reply shortens the trust and never stretches it. Renewals come every third of the TTL,
/// so one failed renewal still leaves a whole period for the next before the lease ends.
///
/// A plain value; every member is a pure function (thread-safe).
class lease_schedule {
public:
    using clock_type = std::chrono::steady_clock;
    using time_point = clock_type::time_point;

    /// A lease of `ttl` (milliseconds, > 0) with the allowance clock_drift(ttl, drift_factor).
    lease_schedule(std::chrono::milliseconds ttl, double drift_factor) noexcept
        : ttl_(ttl), drift_(clock_drift(ttl, drift_factor)) {}
    /// A lease of `ttl` with a fixed allowance `drift` (the election's, an option of its own).
    lease_schedule(std::chrono::milliseconds ttl, std::chrono::microseconds drift) noexcept
        : ttl_(ttl), drift_(drift) {}

    /// The lease length.
    [[nodiscard]] std::chrono::milliseconds ttl() const noexcept { return ttl_; }
    /// The clock drift allowance (microseconds).
    [[nodiscard]] std::chrono::microseconds drift() const noexcept { return drift_; }

    /// How often the lease is renewed: a third of the TTL, at least 1 ms.
    [[nodiscard]] std::chrono::milliseconds renew_period() const noexcept {
        return std::max(ttl_ / 3, std::chrono::milliseconds(1));
    }

    /// Until when a lease whose request was sent at `sent` may be trusted: `sent + ttl - drift`
    /// (the first instant it may not).
    [[nodiscard]] time_point valid_until(time_point sent) const noexcept {
        return sent + ttl_ - drift_;
    }

    /// What is left of the lease `elapsed` after its request was sent (Redlock's validity
    /// time: `ttl - elapsed - drift`); zero or less: nothing can be trusted.
    [[nodiscard]] std::chrono::microseconds validity_left(
        clock_type::duration elapsed) const noexcept {
        return std::chrono::duration_cast<std::chrono::microseconds>(ttl_ - elapsed) - drift_;
    }

private:
    std::chrono::milliseconds ttl_;
    std::chrono::microseconds drift_;
};

}  // namespace redcoord::detail
REDCOORD_API_END
