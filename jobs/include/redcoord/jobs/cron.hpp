#pragma once
/// @file
/// Five-field cron expressions, the schedule language of repeatable jobs (the format of
/// crontab(5) in Debian's cron, "Vixie cron").

#include <redcoord/core/export.hpp>
#include <redcoord/jobs/time_zone.hpp>

#include <bitset>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

REDCOORD_API_BEGIN
namespace redcoord {

/// A cron schedule: `minute hour day-of-month month day-of-week`, evaluated in UTC.
///
/// Each field is `*`, a number, a range `a-b`, a step `*/n`, `a-b/n` or `a/n` (from `a` to the
/// field's end), or a comma-separated list of those. Months may be named `jan`..`dec` and
/// weekdays `sun`..`sat` (any case); weekday 0 and 7 are both Sunday. The shorthands
/// `@yearly` (`@annually`), `@monthly`, `@weekly`, `@daily` (`@midnight`) and `@hourly` are
/// accepted. As in crontab(5): when both day fields are restricted (neither starts with
/// `*`), a day matches when *either* matches; otherwise both must.
///
/// Times are calendar times (`std::chrono::sys_seconds`, UTC), not steady-clock time: a
/// schedule names minutes of the civil calendar, in UTC or in a named zone (time_zone). The caller decides which clock supplies
/// "now" (repeatable jobs use the Redis server's `TIME`, shared by every process).
///
/// @par Thread safety
/// Immutable after construction; share freely.
///
/// @par Errors
/// The constructor throws invalid_argument naming the field and the fault (a wrong field
/// count, a value out of range, a zero step, an unknown name).
///
/// @par Cost
/// next_after() walks months, days, hours and minutes, skipping whole units that cannot match:
/// at most a few thousand steps, no allocation.
class cron_schedule {
public:
    /// Parses `expression` (fields separated by spaces or tabs).
    /// @throws invalid_argument for a malformed expression.
    explicit cron_schedule(std::string_view expression);

    /// The first minute strictly after `after` that the schedule matches (seconds zero), or
    /// nullopt when none comes within the next 8 years (for example `0 0 30 2 *`: February
    /// has no 30th).
    [[nodiscard]] std::optional<std::chrono::sys_seconds> next_after(
        std::chrono::sys_seconds after) const;

    /// The same with the fields read as local (wall-clock) time of `zone`. Across a
    /// daylight-saving change, as cron daemons do: a local time the change skips runs once, at
    /// the change (the first instant after the gap); a local time that happens twice (clocks
    /// turned back) runs once, at its first occurrence.
    [[nodiscard]] std::optional<std::chrono::sys_seconds> next_after(std::chrono::sys_seconds after,
                                                                     const time_zone& zone) const;

    /// True when the minute that contains `t` matches.
    [[nodiscard]] bool matches(std::chrono::sys_seconds t) const;

    /// The expression as given.
    [[nodiscard]] const std::string& expression() const noexcept { return expression_; }

private:
    [[nodiscard]] bool day_matches(std::chrono::sys_days d) const;

    std::string expression_;
    std::bitset<60> minutes_;
    std::bitset<24> hours_;
    std::bitset<32> days_;      // 1..31
    std::bitset<13> months_;    // 1..12
    std::bitset<7> weekdays_;   // 0 (Sunday)..6
    bool days_any_ = true;      // the day-of-month field starts with `*`
    bool weekdays_any_ = true;  // the day-of-week field starts with `*`
};

}  // namespace redcoord

REDCOORD_API_END
