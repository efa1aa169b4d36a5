#include "tick_plan.hpp"

#include <algorithm>
#include <deque>

namespace redcoord::detail {

namespace {

// Largest multiple of `step` that is <= t (also for negative t).
std::int64_t floor_to(std::int64_t t, std::int64_t step) {
    const auto q = t / step;
    return (t % step != 0 && t < 0 ? q - 1 : q) * step;
}

}  // namespace

std::vector<std::int64_t> due_ticks(const tick_rule& rule, std::int64_t last, std::int64_t now,
                                    std::size_t cap) {
    std::vector<std::int64_t> out;
    if (now <= last || cap == 0) return out;
    const std::size_t keep = rule.catch_up ? cap : 1;
    if (rule.every.count() > 0) {
        const auto step = static_cast<std::int64_t>(rule.every.count());
        const auto newest = floor_to(now, step);
        if (newest <= last) return out;
        auto first = floor_to(last, step) + step;
        // Only the latest `keep` ticks: no walk over a long outage.
        first = std::max(first, newest - static_cast<std::int64_t>(keep - 1) * step);
        for (auto t = first; t <= newest; t += step) out.push_back(t);
        return out;
    }
    if (!rule.cron) return out;
    using namespace std::chrono;
    std::deque<std::int64_t> latest;
    // Cron ticks fall on whole minutes: the next one after last's second is after last too.
    auto at = sys_seconds(floor<seconds>(milliseconds(last)));
    for (;;) {
        const auto next = rule.cron->next_after(at, rule.zone);
        if (!next) break;
        const auto t = duration_cast<milliseconds>(next->time_since_epoch()).count();
        if (t > now) break;
        if (t > last) {
            latest.push_back(t);
            if (latest.size() > keep) latest.pop_front();
        }
        at = *next;
    }
    out.assign(latest.begin(), latest.end());
    return out;
}

}  // namespace redcoord::detail
