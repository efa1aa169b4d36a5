#pragma once
/// @file
/// A read-only snapshot of a job queue for operators (`redcoord inspect jobs NAME`).

#include <redcoord/core/export.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/jobs/job_queue.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord {

/// One repeatable job as registered.
struct repeat_inspection {
    std::string name;                    ///< Its name.
    std::chrono::milliseconds every{0};  ///< Its interval, or 0 for a cron schedule.
    std::string cron;                    ///< Its cron expression, when `every` is 0.
    std::string time_zone;               ///< The zone of `cron`.
    std::string missed;                  ///< "skip" or "catch_up".
    std::int64_t last_tick_ms = 0;       ///< The last tick added (server ms since the Unix epoch).
};

/// A job queue at one instant (read in one script, so consistent).
struct jobs_inspection {
    job_counts counts;    ///< Jobs per state.
    bool paused = false;  ///< Paused (job_queue::pause()): workers claim nothing.
    /// How long the next ungrouped job to run has been waiting since it was added (none: no
    /// ungrouped job waits).
    std::optional<std::chrono::milliseconds> oldest_waiting_age;
    /// The scheduler that leads (the election named after the queue), if any.
    std::optional<std::string> scheduler;
    std::uint64_t scheduler_epoch = 0;       ///< Its epoch (0 when none leads).
    std::vector<repeat_inspection> repeats;  ///< The repeatable jobs, by name.
    /// The groups with ready or active jobs or a limit, by name (at most 1000).
    std::vector<group_counts> groups;
};

/// Reads the job queue `name` under `prefix` (job_queue_options::prefix). One round trip; never
/// writes. Source of the layout: job_queue, job_scheduler.
/// @throws invalid_argument for a bad name; connection_error / timeout_error / reply_error as
///         the pool's commands.
[[nodiscard]] jobs_inspection inspect_jobs(connection_pool& pool, std::string_view name,
                                           std::string_view prefix = default_prefix);

}  // namespace redcoord

REDCOORD_API_END
