#include <redcoord/core/detail/options_check.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/options.hpp>

#include <cmath>
#include <cstdint>
#include <string>

namespace redcoord {

std::chrono::microseconds clock_drift(std::chrono::milliseconds ttl, double drift_factor) noexcept {
    const double us = static_cast<double>(ttl.count()) * 1000.0 * drift_factor;
    return std::chrono::microseconds(static_cast<std::int64_t>(std::ceil(us))) +
           std::chrono::milliseconds(2);
}

namespace detail {

void require_option(bool ok, std::string_view owner, std::string_view field,
                    std::string_view rule) {
    if (!ok)
        throw invalid_argument(std::string(owner) + "::" + std::string(field) + " must " +
                               std::string(rule));
}

void check_timing(const lock_timing& t, std::string_view owner) {
    require_option(t.ttl.count() > 0, owner, "timing.ttl", "be > 0");
    require_option(t.drift_factor >= 0.0 && t.drift_factor < 0.5, owner, "timing.drift_factor",
                   "be in [0, 0.5)");
    require_option(clock_drift(t.ttl, t.drift_factor) < t.ttl, owner, "timing.ttl",
                   "exceed the drift allowance (ttl * drift_factor + 2 ms)");
    require_option(t.max_retry_interval.count() > 0, owner, "timing.max_retry_interval", "be > 0");
    require_option(t.retry_jitter.count() >= 0, owner, "timing.retry_jitter", "be >= 0");
    require_option(t.wake_jitter.count() >= 0, owner, "timing.wake_jitter", "be >= 0");
}

void check_replication(const replication_options& r, std::chrono::milliseconds ttl,
                       std::string_view owner) {
    if (r.replicas == 0) return;  // the timeout is ignored then
    require_option(r.timeout.count() > 0, owner, "replication.timeout", "be > 0 when replicas > 0");
    require_option(r.timeout < ttl, owner, "replication.timeout", "be < ttl");
}

}  // namespace detail
}  // namespace redcoord
