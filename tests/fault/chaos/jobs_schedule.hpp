#pragma once
// Jobs fault schedules (issue 17's harness, for the jobs part): the work-queue schedules of
// queue_schedule.hpp with chaos_jobs_client (a producer adding jobs, three job_worker
// processes). At the end each job is read from the server: completed ones count as acked,
// waiting, delayed and active ones as left, and two rules of the jobs part are checked on top of
// history::check_queue(): no job failed or went dead (reruns under faults spend attempts, never
// the job), and a completed job's result is its last attempt's (a worker cut off or paused past
// its lease finishes its handler late, and its settlement must be refused).

#include "queue_schedule.hpp"

#include <chrono>
#include <string>

namespace chaos {

// Runs `s` with the chaos_jobs_client at `client_path`. Needs root (local_network).
queue_outcome run_jobs(const queue_schedule& s, const std::string& client_path);

// Safe families by seed: jobs/cut-or-paused, jobs/killed, jobs/aof-restart.
queue_schedule safe_jobs_schedule(unsigned seed, int seconds);

// jobs/restart-at-once: server restarts without persistence, at once (jobs lost).
queue_schedule jobs_demonstration(unsigned seed, int seconds);

// jobs/flows: the producer adds flows (a parent and two children, jobs_client.cpp) while
// workers are SIGKILLed, cut off and paused past their lease. Checked on top of the above
// (check_flows()): a parent never starts before the run that completed its last child
// returned, it sees every child's result, and none is left waiting once its children completed.
queue_schedule flows_schedule(unsigned seed, int seconds);

// jobs/flows-early: the same with a broken release (a child's parents released when the child
// starts, the client's `flows-early`): the checker must catch parents that ran early.
queue_schedule flows_demonstration(unsigned seed, int seconds);

// jobs/groups: the producer adds jobs to three groups with limits (big 2, mid 1, small 1;
// five in eight jobs to big) while workers are SIGKILLed, cut off and paused past their
// lease. Checked on top of the work rules (check_groups()): no group ever runs more jobs at
// once than its limit.
queue_schedule groups_schedule(unsigned seed, int seconds);

// jobs/groups-over: the same with a broken count (each run zeroes its group's active count,
// the client's `groups-over`): the checker must catch groups running past their limit.
queue_schedule groups_demonstration(unsigned seed, int seconds);

// The group-limit rule over a run's history (the clients' `gstart` and `gran` events; `lease`
// the workers' lease): the handler spans of one group that surely overlapped on the server
// never outnumber its limit.
std::vector<redcoord::testing::history::violation> check_groups(
    const std::vector<redcoord::testing::history::event>& h, std::chrono::milliseconds lease);

// The flow rules over a run's history and the jobs' end states (by id): parents are the ids
// without a '.', their children `<parent>.<k>`.
std::vector<redcoord::testing::history::violation> check_flows(
    const std::vector<redcoord::testing::history::event>& h,
    const std::vector<redcoord::testing::history::job_end_state>& jobs);

}  // namespace chaos
