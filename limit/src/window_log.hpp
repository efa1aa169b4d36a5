#pragma once
// The decision of sliding_window_limiter, without a server: the same steps as
// lua/window_log.lua over a sorted log of admission times (microseconds, one entry per
// admitted unit), so the unit tests' schedules check what the script decides.
//
// A unit admitted at s counts while now < s + window; a request of cost c is admitted iff the
// units still counting plus c are at most `limit`.

#include <redcoord/limit/limit_result.hpp>

#include <cstdint>
#include <deque>

namespace redcoord::detail {

struct window_params {
    std::uint64_t limit = 1;
    std::int64_t window_us = 1;
};

// Decides a request of `cost` at `now_us` and updates `log` (sorted ascending) as the script
// updates its sorted set.
[[nodiscard]] limit_result window_decide(const window_params& p, std::deque<std::int64_t>& log,
                                         std::int64_t now_us, std::uint64_t cost);

}  // namespace redcoord::detail
