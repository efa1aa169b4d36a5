#pragma once
// Private to jobs: which ticks of a repeatable job are due (a sans-I/O engine: times in, tick
// times out), for job_scheduler. Times are the server's, in ms since the Unix epoch.

#include <redcoord/jobs/cron.hpp>
#include <redcoord/jobs/time_zone.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

namespace redcoord::detail {

struct tick_rule {
    std::chrono::milliseconds every{0};  // > 0: every multiple of it since the epoch
    std::optional<cron_schedule> cron;   // else this, read in `zone`
    time_zone zone = time_zone::utc();
    bool catch_up = true;  // false: only the latest missed tick
};

// Most ticks one pass adds for one repeat (the latest ones) under catch-up.
inline constexpr std::size_t max_ticks_per_pass = 1000;

// The tick times in (last, now], ascending: all of them (at most `cap`, the latest) with
// catch-up, else only the latest.
std::vector<std::int64_t> due_ticks(const tick_rule& rule, std::int64_t last, std::int64_t now,
                                    std::size_t cap = max_ticks_per_pass);

}  // namespace redcoord::detail
