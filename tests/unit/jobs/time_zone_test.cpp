// time_zone (TZif files and their POSIX TZ footer) and cron schedules in local time, against
// the system's tzdata (Debian package `tzdata`, installed by scripts/bootstrap).

#include "posix_tz.hpp"

#include <redcoord/core/errors.hpp>
#include <redcoord/jobs/cron.hpp>
#include <redcoord/jobs/time_zone.hpp>

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

using namespace std::chrono;
using redcoord::cron_schedule;
using redcoord::time_zone;
using redcoord::detail::posix_tz;

namespace {

sys_seconds at(year_month_day d, int h = 0, int m = 0, int s = 0) {
    return sys_days{d} + hours(h) + minutes(m) + seconds(s);
}

std::int64_t epoch(sys_seconds t) { return t.time_since_epoch().count(); }

}  // namespace

TEST(TimeZone, BerlinSwitchesAtOneUtcOnTheLastSundaysOfMarchAndOctober) {
    const auto z = time_zone::load("Europe/Berlin");
    EXPECT_EQ(z.name(), "Europe/Berlin");
    EXPECT_EQ(z.offset_at(at(2026y / 1 / 15)), 1h);
    EXPECT_EQ(z.offset_at(at(2026y / 7 / 1)), 2h);
    EXPECT_EQ(z.offset_at(at(2026y / 3 / 29, 0, 59, 59)), 1h);
    EXPECT_EQ(z.offset_at(at(2026y / 3 / 29, 1)), 2h);
    EXPECT_EQ(z.offset_at(at(2026y / 10 / 25, 0, 59, 59)), 2h);
    EXPECT_EQ(z.offset_at(at(2026y / 10 / 25, 1)), 1h);
    // Past the file's transitions (2037): the footer's rule.
    EXPECT_EQ(z.offset_at(at(2045y / 7 / 1)), 2h);
    EXPECT_EQ(z.offset_at(at(2045y / 12 / 1)), 1h);
    EXPECT_EQ(z.offset_at(at(2045y / 3 / 26, 0, 59, 59)), 1h);  // last Sunday of March 2045
    EXPECT_EQ(z.offset_at(at(2045y / 3 / 26, 1)), 2h);
    // Before the first transition: time type 0 (local mean time, +0:53:28).
    EXPECT_EQ(z.offset_at(at(1850y / 1 / 1)), 53min + 28s);
}

TEST(TimeZone, SouthernAndWesternZones) {
    const auto ny = time_zone::load("America/New_York");
    EXPECT_EQ(ny.offset_at(at(2026y / 3 / 8, 6, 59, 59)), -5h);
    EXPECT_EQ(ny.offset_at(at(2026y / 3 / 8, 7)), -4h);
    EXPECT_EQ(ny.offset_at(at(2026y / 11 / 1, 6)), -5h);
    const auto sydney = time_zone::load("Australia/Sydney");
    EXPECT_EQ(sydney.offset_at(at(2026y / 1 / 15)), 11h);
    EXPECT_EQ(sydney.offset_at(at(2026y / 7 / 15)), 10h);
    EXPECT_EQ(sydney.offset_at(at(2050y / 1 / 15)), 11h);
    EXPECT_EQ(sydney.offset_at(at(2050y / 7 / 15)), 10h);
    EXPECT_EQ(time_zone::load("Asia/Kolkata").offset_at(at(2040y / 1 / 1)), 5h + 30min);
    EXPECT_EQ(time_zone::load("UTC").offset_at(at(2026y / 7 / 1)), 0s);
    EXPECT_EQ(time_zone::utc().offset_at(at(2026y / 7 / 1)), 0s);
}

// The footer alone, for a zone the TZif data no longer covers: every form of rule date.
TEST(TimeZone, PosixRulesOfEveryForm) {
    const auto cet = posix_tz::parse("CET-1CEST,M3.5.0,M10.5.0/3");
    EXPECT_EQ(cet.std_offset, 3600);
    EXPECT_EQ(cet.offset_at(epoch(at(2030y / 3 / 31, 0, 59, 59))), 3600);
    EXPECT_EQ(cet.offset_at(epoch(at(2030y / 3 / 31, 1))), 7200);
    const auto us = posix_tz::parse("EST5EDT");  // no rule: the US default
    EXPECT_EQ(us.offset_at(epoch(at(2030y / 7 / 1))), -4 * 3600);
    EXPECT_EQ(us.offset_at(epoch(at(2030y / 1 / 1))), -5 * 3600);
    const auto julian = posix_tz::parse("<+03>-3<+04>,J60/0,J305/0");  // Mar 1, Nov 1 (no Feb 29)
    EXPECT_EQ(julian.offset_at(epoch(at(2028y / 2 / 29, 20, 59, 59))), 3 * 3600);
    EXPECT_EQ(julian.offset_at(epoch(at(2028y / 2 / 29, 21))), 4 * 3600);
    const auto zero = posix_tz::parse("XXX-2YYY,59/0,304/0");  // zero-based: Feb 29 counted
    EXPECT_EQ(zero.offset_at(epoch(at(2028y / 2 / 28, 21, 59, 59))), 2 * 3600);
    EXPECT_EQ(zero.offset_at(epoch(at(2028y / 2 / 28, 22))), 3 * 3600);
    const auto fixed = posix_tz::parse("<+0530>-5:30");
    EXPECT_EQ(fixed.offset_at(0), 5 * 3600 + 30 * 60);
    for (const char* bad : {"", "C-1", "CET", "CET-1CEST,M3.5.0", "CET-1CEST,M13.5.0,M10.5.0",
                            "CET-1CEST,M3.6.0,M10.5.0", "<CET-1", "CET-1CEST,M3.5.0,M10.5.0x"})
        EXPECT_THROW((void)posix_tz::parse(bad), redcoord::invalid_argument) << bad;
}

TEST(TimeZone, BadNamesAndBadFilesAreTypedErrors) {
    for (const char* bad : {"", "/etc/passwd", "../etc/passwd", "Europe/../../etc/passwd",
                            "Europe/Berlin;rm", "No/Such_Zone"})
        EXPECT_THROW((void)time_zone::load(bad), redcoord::invalid_argument) << bad;
    EXPECT_THROW((void)time_zone::parse("x", "not a tzif file at all, really not"),
                 redcoord::invalid_argument);
    std::ifstream in("/usr/share/zoneinfo/Europe/Berlin", std::ios::binary);
    const std::string full((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_GT(full.size(), 100U);
    for (std::size_t cut : {std::size_t{10}, std::size_t{60}, full.size() / 2, full.size() - 3})
        EXPECT_THROW((void)time_zone::parse("cut", full.substr(0, cut)), redcoord::invalid_argument)
            << cut;
    EXPECT_EQ(time_zone::parse("Berlin copy", full).offset_at(at(2026y / 7 / 1)), 2h);
}

TEST(CronInAZone, FieldsAreLocalWallClockTime) {
    const auto berlin = time_zone::load("Europe/Berlin");
    const cron_schedule nine("0 9 * * *");
    EXPECT_EQ(nine.next_after(at(2026y / 11 / 26), berlin), at(2026y / 11 / 26, 8));
    EXPECT_EQ(nine.next_after(at(2026y / 7 / 1), berlin), at(2026y / 7 / 1, 7));
    EXPECT_EQ(nine.next_after(at(2026y / 7 / 1), time_zone::utc()), at(2026y / 7 / 1, 9));
    const auto ny = time_zone::load("America/New_York");
    EXPECT_EQ(cron_schedule("0 0 * * fri").next_after(at(2026y / 11 / 26), ny),
              at(2026y / 11 / 27, 5));
}

// 2026-03-29 in Berlin: 02:00-02:59 local does not exist. A job at 02:30 runs once, at the change.
TEST(CronInAZone, ASkippedLocalTimeRunsOnceAtTheChange) {
    const auto berlin = time_zone::load("Europe/Berlin");
    const cron_schedule c("30 2 * * *");
    const auto first = c.next_after(at(2026y / 3 / 28, 12), berlin);
    EXPECT_EQ(first, at(2026y / 3 / 29, 1));                             // 03:00 CEST
    EXPECT_EQ(c.next_after(*first, berlin), at(2026y / 3 / 30, 0, 30));  // 02:30 CEST
    // Every minute of the gap maps to the change: one run, then 03:01 local.
    const cron_schedule every("* * * * *");
    const auto g = every.next_after(at(2026y / 3 / 29, 0, 59), berlin);
    EXPECT_EQ(g, at(2026y / 3 / 29, 1));
    EXPECT_EQ(every.next_after(*g, berlin), at(2026y / 3 / 29, 1, 1));
}

// 2026-10-25 in Berlin: 02:00-02:59 local happens twice. It runs at the first pass only.
TEST(CronInAZone, ARepeatedLocalTimeRunsOnceAtItsFirstOccurrence) {
    const auto berlin = time_zone::load("Europe/Berlin");
    const cron_schedule c("30 2 * * *");
    const auto first = c.next_after(at(2026y / 10 / 24, 12), berlin);
    EXPECT_EQ(first, at(2026y / 10 / 25, 0, 30));                         // 02:30 CEST
    EXPECT_EQ(c.next_after(*first, berlin), at(2026y / 10 / 26, 1, 30));  // 02:30 CET, next day
    const cron_schedule half("*/30 * * * *");
    auto t = at(2026y / 10 / 24, 23, 45);
    std::vector<sys_seconds> runs;
    for (int i = 0; i < 4; ++i) runs.push_back(t = *half.next_after(t, berlin));
    EXPECT_EQ(runs, (std::vector<sys_seconds>{at(2026y / 10 / 25, 0), at(2026y / 10 / 25, 0, 30),
                                              at(2026y / 10 / 25, 2), at(2026y / 10 / 25, 2, 30)}));
}
