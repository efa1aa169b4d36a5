// due_ticks(): the ticks of a repeatable job that a scheduler pass adds, without a server.

#include "tick_plan.hpp"

#include <gtest/gtest.h>

using namespace std::chrono;
using redcoord::cron_schedule;
using redcoord::time_zone;
using redcoord::detail::due_ticks;
using redcoord::detail::tick_rule;

namespace {

tick_rule every(milliseconds d, bool catch_up = true) {
    tick_rule r;
    r.every = d;
    r.catch_up = catch_up;
    return r;
}

std::int64_t ms(sys_seconds t) { return duration_cast<milliseconds>(t.time_since_epoch()).count(); }

}  // namespace

TEST(TickPlan, EveryTicksAtMultiplesOfTheIntervalAfterTheLastOne) {
    EXPECT_EQ(due_ticks(every(100ms), 1050, 1320), (std::vector<std::int64_t>{1100, 1200, 1300}));
    EXPECT_EQ(due_ticks(every(100ms), 1100, 1199), std::vector<std::int64_t>{});
    EXPECT_EQ(due_ticks(every(100ms), 1100, 1200), std::vector<std::int64_t>{1200});
    EXPECT_EQ(due_ticks(every(100ms), 1300, 1300), std::vector<std::int64_t>{});
    EXPECT_EQ(due_ticks(every(100ms), 1300, 1250), std::vector<std::int64_t>{});
}

TEST(TickPlan, MissedTicksAreSkippedOrCaughtUpWithinTheCap) {
    EXPECT_EQ(due_ticks(every(100ms, false), 1000, 1550), std::vector<std::int64_t>{1500});
    EXPECT_EQ(due_ticks(every(100ms, true), 1000, 1550),
              (std::vector<std::int64_t>{1100, 1200, 1300, 1400, 1500}));
    // A long outage: only the latest `cap`, without walking the rest.
    const auto many = due_ticks(every(1ms), 0, 86'400'000'000LL, 3);
    EXPECT_EQ(many,
              (std::vector<std::int64_t>{86'399'999'998LL, 86'399'999'999LL, 86'400'000'000LL}));
}

TEST(TickPlan, CronTicksInItsZoneAfterTheLastOne) {
    tick_rule r;
    r.cron.emplace("*/15 * * * *");
    const auto base = sys_days{2026y / 11 / 26} + 10h;
    EXPECT_EQ(due_ticks(r, ms(base), ms(base + 46min)),
              (std::vector<std::int64_t>{ms(base + 15min), ms(base + 30min), ms(base + 45min)}));
    // The last tick itself is not due again, a millisecond later neither.
    EXPECT_EQ(due_ticks(r, ms(base + 15min), ms(base + 15min) + 1), std::vector<std::int64_t>{});
    r.catch_up = false;
    EXPECT_EQ(due_ticks(r, ms(base), ms(base + 46min)),
              std::vector<std::int64_t>{ms(base + 45min)});
    tick_rule berlin;
    berlin.cron.emplace("0 9 * * *");
    berlin.zone = time_zone::load("Europe/Berlin");
    EXPECT_EQ(due_ticks(berlin, ms(sys_days{2026y / 11 / 26}), ms(sys_days{2026y / 11 / 27})),
              std::vector<std::int64_t>{ms(sys_days{2026y / 11 / 26} + 8h)});
}
