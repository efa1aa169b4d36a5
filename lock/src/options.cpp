// Option checks of both lock kinds; the fields they share are checked once, by one helper.
#include "lock_engine.hpp"

#include <redcoord/core/errors.hpp>
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/lock/redlock.hpp>

#include <string>
#include <string_view>

namespace redcoord::detail {

namespace {

void require(bool ok, std::string_view options, std::string_view field, std::string_view rule) {
    if (!ok)
        throw invalid_argument(std::string(options) + "::" + std::string(field) + " must " +
                               std::string(rule));
}

// The fields lock_options and redlock_options share, under the same names.
template <class Options>
void validate_shared(const Options& o, std::string_view name) {
    require(o.ttl.count() > 0, name, "ttl", "be > 0");
    require(o.drift_factor >= 0.0 && o.drift_factor < 0.5, name, "drift_factor", "be in [0, 0.5)");
    require(validity(o.ttl, std::chrono::microseconds(0), o.drift_factor).count() > 0, name, "ttl",
            "exceed the drift allowance (ttl * drift_factor + 2 ms)");
    require(o.retry_jitter.count() >= 0, name, "retry_jitter", "be >= 0");
    require(o.wake_jitter.count() >= 0, name, "wake_jitter", "be >= 0");
    require(o.max_retry_interval.count() > 0, name, "max_retry_interval", "be > 0");
    require(o.handoff_after.count() >= 0, name, "handoff_after", "be >= 0");
    require(!o.watchdog || o.max_extensions > 0, name, "max_extensions",
            "be > 0 when the watchdog is on");
    require(!o.watchdog || o.ttl >= std::chrono::milliseconds(3), name, "ttl",
            "be >= 3 ms with the watchdog (it extends at ttl/3)");
}

}  // namespace

void validate(const lock_options& o) {
    validate_shared(o, "lock_options");
    if (o.replicas == 0) return;  // replica_timeout is ignored then
    require(o.replica_timeout.count() > 0, "lock_options", "replica_timeout",
            "be > 0 when replicas > 0");
    require(o.replica_timeout < o.ttl, "lock_options", "replica_timeout", "be < ttl");
}

void validate(const redlock_options& o, std::size_t n) {
    if (n == 0) throw invalid_argument("redlock needs at least one node");
    validate_shared(o, "redlock_options");
    require(o.node_timeout.count() > 0, "redlock_options", "node_timeout", "be > 0");
    require(o.node_timeout < o.ttl, "redlock_options", "node_timeout", "be < ttl");
    require(o.retry_delay.count() > 0, "redlock_options", "retry_delay", "be > 0");
}

}  // namespace redcoord::detail
