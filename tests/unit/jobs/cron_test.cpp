// cron_schedule: five-field expressions as crontab(5) defines them, evaluated in UTC.

#include <redcoord/core/errors.hpp>
#include <redcoord/jobs/cron.hpp>

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

using namespace std::chrono;
using redcoord::cron_schedule;

namespace {

sys_seconds at(year_month_day d, int h = 0, int m = 0, int s = 0) {
    return sys_days{d} + hours(h) + minutes(m) + seconds(s);
}

sys_seconds next(const char* expr, sys_seconds after) {
    const auto n = cron_schedule(expr).next_after(after);
    EXPECT_TRUE(n) << expr;
    return n.value_or(sys_seconds{});
}

}  // namespace

TEST(Cron, StepsRangesAndListsOfMinutesAndHours) {
    const auto t = at(2026y / 11 / 26, 10, 7, 30);
    EXPECT_EQ(next("*/15 * * * *", t), at(2026y / 11 / 26, 10, 15));
    EXPECT_EQ(next("5/20 * * * *", t), at(2026y / 11 / 26, 10, 25));
    EXPECT_EQ(next("0,30 9-17 * * *", t), at(2026y / 11 / 26, 10, 30));
    EXPECT_EQ(next("0 9-17/4 * * *", t), at(2026y / 11 / 26, 13, 0));
    EXPECT_EQ(next("0 0 * * *", t), at(2026y / 11 / 27));
}

TEST(Cron, StrictlyAfterTheGivenMinute) {
    EXPECT_EQ(next("@hourly", at(2026y / 11 / 26, 10)), at(2026y / 11 / 26, 11));
    EXPECT_EQ(next("* * * * *", at(2026y / 11 / 26, 10, 0, 59)), at(2026y / 11 / 26, 10, 1));
    EXPECT_TRUE(cron_schedule("0 10 * * *").matches(at(2026y / 11 / 26, 10, 0, 59)));
    EXPECT_FALSE(cron_schedule("0 10 * * *").matches(at(2026y / 11 / 26, 10, 1)));
}

TEST(Cron, WeekdaysByNumberAndNameWithSevenAsSunday) {
    // 2026-11-26 is a Thursday.
    const auto thu = at(2026y / 11 / 26, 10);
    EXPECT_EQ(next("0 9 * * mon-fri", thu), at(2026y / 11 / 27, 9));
    EXPECT_EQ(next("0 9 * * MON-FRI", at(2026y / 11 / 27, 10)), at(2026y / 11 / 30, 9));
    EXPECT_EQ(next("0 0 * * 7", thu), at(2026y / 11 / 29));
    EXPECT_EQ(next("0 0 * * 0", thu), at(2026y / 11 / 29));
    EXPECT_EQ(next("@weekly", thu), at(2026y / 11 / 29));
}

// crontab(5): both day fields restricted means either may match.
TEST(Cron, BothDayFieldsRestrictedMatchEither) {
    EXPECT_EQ(next("0 0 13 * fri", at(2026y / 11 / 1)), at(2026y / 11 / 6));
    EXPECT_EQ(next("0 0 13 * fri", at(2026y / 11 / 6)), at(2026y / 11 / 13));
    EXPECT_EQ(next("0 0 13 * fri", at(2026y / 11 / 13)), at(2026y / 11 / 20));
    // One restricted: it alone decides.
    EXPECT_EQ(next("0 0 * * fri", at(2026y / 11 / 1)), at(2026y / 11 / 6));
    EXPECT_EQ(next("0 0 13 * *", at(2026y / 11 / 1)), at(2026y / 11 / 13));
    // `*/2` starts with `*`: it counts as unrestricted for the either-rule, as in cron.
    EXPECT_EQ(next("0 0 */2 * fri", at(2026y / 11 / 1)), at(2026y / 11 / 13));
}

TEST(Cron, MonthsByNameAndLeapDays) {
    EXPECT_EQ(next("0 12 1 jan,jul *", at(2026y / 11 / 26)), at(2027y / 1 / 1, 12));
    EXPECT_EQ(next("0 0 29 2 *", at(2026y / 3 / 1)), at(2028y / 2 / 29));
    EXPECT_EQ(next("@yearly", at(2026y / 11 / 26)), at(2027y / 1 / 1));
    EXPECT_EQ(next("@monthly", at(2026y / 12 / 31, 23, 59)), at(2027y / 1 / 1));
    EXPECT_EQ(next("59 23 31 12 *", at(2026y / 12 / 31, 23, 58)), at(2026y / 12 / 31, 23, 59));
}

TEST(Cron, ADateThatNeverComesHasNoNextTime) {
    EXPECT_FALSE(cron_schedule("0 0 30 2 *").next_after(at(2026y / 1 / 1)));
    EXPECT_FALSE(cron_schedule("0 0 31 4,6,9,11 *").next_after(at(2026y / 1 / 1)));
}

TEST(Cron, MalformedExpressionsAreTypedErrorsNamingTheField) {
    for (const char* bad :
         {"", "* * * *", "* * * * * *", "60 * * * *", "* 24 * * *", "* * 0 * *", "* * 32 * *",
          "* * * 13 *", "* * * * 8", "*/0 * * * *", "5-1 * * * *", "* * * foo *", "* * * * funday",
          "1,,2 * * * *", "a * * * *", "*/x * * * *", "@reboot", "1- * * * *"}) {
        EXPECT_THROW(cron_schedule{bad}, redcoord::invalid_argument) << "'" << bad << "'";
    }
    try {
        cron_schedule("0 25 * * *");
        FAIL();
    } catch (const redcoord::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("hour"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("0-23"), std::string::npos) << e.what();
    }
    EXPECT_EQ(cron_schedule("  */5\t* * * *  ").expression(), "  */5\t* * * *  ");
}

// next_after() against a minute-by-minute scan from random starts.
TEST(Cron, NextAfterAgreesWithAMinuteByMinuteScan) {
    const std::vector<const char*> exprs{
        "*/7 * * * *",  "15 3,15 * * *",     "0 */6 * * mon,thu", "30 12 1-7 * 1",
        "0 0 13 * fri", "45 23 * * sat,sun", "0 8-18/2 * * 1-5",  "10,20 * 28-31 * *"};
    std::mt19937_64 rng(20261126);
    std::uniform_int_distribution<long long> offset(0, 4LL * 366 * 24 * 60);
    const auto base = at(2026y / 1 / 1);
    for (const char* e : exprs) {
        const cron_schedule c(e);
        for (int i = 0; i < 40; ++i) {
            const auto from = base + minutes(offset(rng)) + seconds(rng() % 60);
            const auto n = c.next_after(from);
            ASSERT_TRUE(n) << e;
            ASSERT_GT(*n, from);
            ASSERT_TRUE(c.matches(*n)) << e;
            for (auto t = floor<minutes>(from) + minutes(1); t < *n; t += minutes(1))
                ASSERT_FALSE(c.matches(t)) << e << " skipped a match";
        }
    }
}
