#include <redcoord/lock/acquisition.hpp>

#include <cmath>

namespace redcoord {

std::chrono::milliseconds lock_acquisition::remaining() const noexcept {
    const auto left = valid_until - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) return std::chrono::milliseconds(0);
    return std::chrono::duration_cast<std::chrono::milliseconds>(left);
}

namespace detail {

std::chrono::microseconds clock_drift(std::chrono::milliseconds ttl, double drift_factor) noexcept {
    const double us = static_cast<double>(ttl.count()) * 1000.0 * drift_factor;
    return std::chrono::microseconds(static_cast<std::int64_t>(std::ceil(us))) + std::chrono::milliseconds(2);
}

std::chrono::microseconds validity(std::chrono::milliseconds ttl, std::chrono::microseconds elapsed,
                                   double drift_factor) noexcept {
    return std::chrono::duration_cast<std::chrono::microseconds>(ttl) - elapsed - clock_drift(ttl, drift_factor);
}

quorum_state decide(std::size_t n, std::size_t yes, std::size_t no, std::size_t failed) noexcept {
    const std::size_t q = quorum(n);
    if (yes >= q) return quorum_state::reached;
    // A majority is impossible once more than n - q nodes are out; name the cause.
    if (failed > n - q) return quorum_state::unreachable;
    if (no + failed > n - q) return quorum_state::refused;
    return quorum_state::undecided;
}

}  // namespace detail
}  // namespace redcoord
