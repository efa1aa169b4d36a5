// Option checks of the three lock kinds; the fields they share are checked once, by one
// helper (lock_timing and replication_options by core's).
#include "options_check.hpp"

#include <redcoord/core/detail/options_check.hpp>
#include <redcoord/core/errors.hpp>

#include <string>
#include <string_view>

namespace redcoord::detail {

namespace {

void require(bool ok, std::string_view options, std::string_view field, std::string_view rule) {
    require_option(ok, options, field, rule);
}

// The watchdog's rules, the same for the three lock kinds.
template <class Options>
void validate_watchdog(const Options& o, std::string_view name) {
    require(!o.watchdog || o.max_extensions > 0, name, "max_extensions",
            "be > 0 when the watchdog is on");
    require(!o.watchdog || o.timing.ttl >= std::chrono::milliseconds(3), name, "timing.ttl",
            "be >= 3 ms with the watchdog (it extends at ttl/3)");
}

// The fields lock_options and redlock_options share beyond lock_timing.
template <class Options>
void validate_shared(const Options& o, std::string_view name) {
    check_timing(o.timing, name);
    require(o.handoff_after.count() >= 0, name, "handoff_after", "be >= 0");
    validate_watchdog(o, name);
}

}  // namespace

void validate(const lock_options& o) {
    validate_shared(o, "lock_options");
    check_replication(o.replication, o.timing.ttl, "lock_options");
}

void validate(const fair_lock_options& o) {
    check_timing(o.timing, "fair_lock_options");
    require(o.waiter_lease >= std::chrono::milliseconds(3), "fair_lock_options", "waiter_lease",
            "be >= 3 ms (it is refreshed every waiter_lease/3)");
    validate_watchdog(o, "fair_lock_options");
    check_replication(o.replication, o.timing.ttl, "fair_lock_options");
}

void validate(const redlock_options& o, std::size_t n) {
    if (n == 0) throw invalid_argument("redlock needs at least one node");
    validate_shared(o, "redlock_options");
    require(o.node_timeout.count() > 0, "redlock_options", "node_timeout", "be > 0");
    require(o.node_timeout < o.timing.ttl, "redlock_options", "node_timeout", "be < ttl");
    require(o.retry_delay.count() > 0, "redlock_options", "retry_delay", "be > 0");
}

}  // namespace redcoord::detail
