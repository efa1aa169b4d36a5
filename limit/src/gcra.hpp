#pragma once
// The GCRA decision of rate_limiter, without a server: the same arithmetic, in the same
// order and in doubles, as lua/gcra.lua, so the unit tests' schedules check what the script
// decides. Times are microseconds on one clock (the server's TIME in the script).
//
// State: the theoretical arrival time (TAT) of the next request; absent means idle (full).
// With lead = max(TAT - now, 0), a request of cost c is admitted iff
// lead + c * interval <= capacity (= burst * interval), and then TAT becomes
// now + lead + c * interval. The TAT is whole microseconds plus a fraction, and the
// arithmetic runs on the lead (small numbers): see lua/gcra.lua for why.

#include <redcoord/limit/limit_result.hpp>

#include <cstdint>
#include <optional>

namespace redcoord::detail {

struct gcra_params {
    double interval_us = 0;  // period / rate
    double burst = 1;        // unit requests an idle limiter admits at once
};

struct gcra_tat {
    std::int64_t whole_us = 0;
    double fraction = 0;  // in [0, 1)
    friend bool operator==(const gcra_tat&, const gcra_tat&) = default;
};

struct gcra_step {
    limit_result result;
    std::optional<gcra_tat> tat;  // the state after the request (unchanged when refused)
    std::int64_t ttl_ms = 0;      // the key's PX when admitted: until the limiter is full again
};

[[nodiscard]] gcra_step gcra_decide(const gcra_params& p, const std::optional<gcra_tat>& tat,
                                    std::int64_t now_us, std::uint64_t cost);

}  // namespace redcoord::detail
