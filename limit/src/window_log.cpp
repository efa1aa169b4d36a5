#include "window_log.hpp"

#include <algorithm>

namespace redcoord::detail {

limit_result window_decide(const window_params& p, std::deque<std::int64_t>& log,
                           std::int64_t now_us, std::uint64_t cost) {
    // ZREMRANGEBYSCORE -inf (now - window): scores at or below it have left the window.
    const auto gone = std::upper_bound(log.begin(), log.end(), now_us - p.window_us);
    log.erase(log.begin(), gone);
    const auto n = static_cast<std::uint64_t>(log.size());
    limit_result r;
    if (n + cost > p.limit) {
        const auto due = log[static_cast<std::size_t>(n + cost - p.limit - 1)];
        r.allowed = false;
        r.remaining = p.limit - n;
        r.retry_after = std::chrono::microseconds(due + p.window_us - now_us);
        r.reset_after = std::chrono::microseconds(log.back() + p.window_us - now_us);
        return r;
    }
    // ZADD keeps the set sorted by score; a server clock that stepped back lands mid-log.
    const auto at = std::upper_bound(log.begin(), log.end(), now_us);
    log.insert(at, static_cast<std::size_t>(cost), now_us);
    r.allowed = true;
    r.remaining = p.limit - n - cost;
    r.reset_after = std::chrono::microseconds(p.window_us);
    return r;
}

}  // namespace redcoord::detail
