#pragma once
// The job_queue's Lua scripts. KEYS[1] is the queue's base key `<prefix>jobs:{<name>}`; every
// other key is built from it inside the script (`:job:<id>`, `:waiting`, `:delayed`,
// `:active`, `:completed`, `:dead`, `:result:<id>`, `:seq`) and so shares its hash tag, and
// its Cluster slot. Values arrive as ARGV only. Times are the server's (`TIME`, in ms): due
// times and visibility deadlines are compared by every process of the queue.

#include <redcoord/core/script.hpp>

#include <vector>

namespace redcoord::detail {

const script& job_add_script();            // add one or more jobs (dedup by id)
const script& job_add_flow_script();       // the same, with dependencies (flows)
const script& job_add2_script();           // format 2: flows, groups, dedupe windows, debounce
const script& job_group_limit_script();    // set or clear a group's concurrency limit
const script& job_claim_script();          // promote due, reclaim stalled, pop the best ready jobs
const script& job_settle_script();         // complete / fail / release jobs (token-checked), claim
const script& job_heartbeat_script();      // extend the visibility of a worker's jobs
const script& job_progress_script();       // record progress (token-checked)
const script& job_cancel_script();         // waiting/delayed/waiting_children -> failed
const script& job_retry_script();          // dead/failed -> waiting
const script& job_get_script();            // the job's fields and its result
const script& job_remove_script();         // delete a job that is not active
const script& job_pause_script();          // pause or resume claims (`:paused`)
const script& job_clean_script();          // delete finished jobs older than a cutoff
const script& job_repeat_set_script();     // register or replace a repeatable job
const script& job_repeat_remove_script();  // drop a repeatable job
const script& job_repeat_list_script();    // the repeats and the server's time
const script& job_tick_script();           // add due ticks, fenced by the election's epoch
const script& jobs_inspect_script();       // counts, oldest waiting, scheduler (inspect.cpp)

// All of the above: for the ACL rules and the test that loads every script on a server.
std::vector<const script*> jobs_scripts();

// Priority levels: 0 (lowest) .. max_priority (highest).
inline constexpr int max_job_priority = 9;

}  // namespace redcoord::detail
