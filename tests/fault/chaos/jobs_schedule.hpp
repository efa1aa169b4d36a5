#pragma once
// Jobs fault schedules (issue 17's harness, for the jobs part): the work-queue schedules of
// queue_schedule.hpp with chaos_jobs_client (a producer adding jobs, three job_worker
// processes). At the end each job is read from the server: completed ones count as acked,
// waiting, delayed and active ones as left, and two rules of the jobs part are checked on top of
// history::check_queue(): no job failed or went dead (reruns under faults spend attempts, never
// the job), and a completed job's result is its last attempt's (a worker cut off or paused past
// its lease finishes its handler late, and its settlement must be refused).

#include "queue_schedule.hpp"

#include <string>

namespace chaos {

// Runs `s` with the chaos_jobs_client at `client_path`. Needs root (local_network).
queue_outcome run_jobs(const queue_schedule& s, const std::string& client_path);

// Safe families by seed: jobs/cut-or-paused, jobs/killed, jobs/aof-restart.
queue_schedule safe_jobs_schedule(unsigned seed, int seconds);

// jobs/restart-at-once: server restarts without persistence, at once (jobs lost).
queue_schedule jobs_demonstration(unsigned seed, int seconds);

}  // namespace chaos
