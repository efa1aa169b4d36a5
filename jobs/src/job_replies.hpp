#pragma once
// Private to jobs: one typed reply per jobs script, each read by one decode function, so that
// no caller reads a script's reply by position. A reply of another shape (a script of another
// version, a proxy that rewrote it, a fault) throws protocol_error naming the script and what
// was wrong, never std::out_of_range or std::invalid_argument from deep inside a caller.
// The shapes are the ones documented at the top of each jobs/src/lua/*.lua and in
// docs/jobs-wire.md. Tested without a server in tests/unit/jobs/job_replies_test.cpp.

#include "job_fields.hpp"

#include <redcoord/core/reply.hpp>
#include <redcoord/jobs/job_types.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace redcoord::detail {

/// One job of a claim: jobs_claim.lua's per-job array.
struct claimed_job_reply {
    std::string id, payload;
    unsigned attempt = 0;
    job_options_field options;
    std::chrono::milliseconds timeout{0};
    std::string score;                                      // its place in `:waiting`
    std::map<std::string, std::string> dependency_results;  // a flow's job: id -> result
};

/// jobs_claim.lua's reply (also the tail of jobs_settle.lua's when it claims).
struct claim_reply {
    std::vector<std::string> stalled;  // the ids of stalled jobs this claim took back
    std::int64_t wait_ms = -1;         // when none was claimed: ms until one is due (-1: unknown)
    std::vector<claimed_job_reply> jobs;
};
claim_reply decode_claim(const reply& r);

/// One settlement's answer in jobs_settle.lua's reply.
struct settle_outcome {
    bool held = false;  // the claim token still held the job: the settlement took effect
    std::string
        new_state;  // for a failure that took effect: "waiting", "delayed", "failed", "dead"
};

/// jobs_settle.lua's reply to `settlements` settlements, with a claim when one was asked.
struct settle_reply {
    std::vector<settle_outcome> outcomes;  // one per settlement, in order
    std::optional<claim_reply> claim;
};
settle_reply decode_settle(const reply& r, std::size_t settlements, bool with_claim);

/// jobs_heartbeat.lua's answer for one (job, token) pair.
enum class beat_status {
    lost = 0,       // reclaimed, settled elsewhere, or its lease lapsed
    held = 1,       // renewed
    cancelled = 2,  // renewed, but cancelled: stop it
};
std::vector<beat_status> decode_heartbeat(const reply& r, std::size_t pairs);

/// One job's answer in the add scripts' replies (formats 1 and 2).
struct add_outcome {
    bool added = false;      // code 1
    bool debounced = false;  // code 2
    job_state state = job_state::waiting;
};
std::vector<add_outcome> decode_add(const reply& r, std::size_t jobs);

/// jobs_get.lua's reply, fields by name; nullopt for an unknown job.
struct get_reply {
    std::map<std::string, std::string> fields;
    std::optional<std::string> result;
    std::optional<std::int64_t> due_ms;  // its score in `:delayed`
    std::vector<std::string> pending_dependencies, dependents;
};
std::optional<get_reply> decode_get(const reply& r);

/// A job_info from get_reply (the server's fields, typed); `id` is the job's.
job_info to_job_info(std::string id, const get_reply& g);

/// The replies that are a job's state or nil (jobs_cancel.lua, jobs_remove.lua).
std::optional<job_state> decode_state_or_nil(const reply& r, const char* script);

/// The replies that are 1 or 0 (pause, retry, progress, repeat removal).
bool decode_flag(const reply& r, const char* script);

/// The replies that are a count >= 0 (clean, the group limit's previous value, ticks added).
std::uint64_t decode_count(const reply& r, const char* script);

/// One repeat in jobs_repeat_list.lua's reply; optional fields are those the server may lack.
struct repeat_entry {
    std::string name;
    std::chrono::milliseconds every{0};
    std::string cron, time_zone, missed;
    std::int64_t last_tick_ms = 0;
};

/// jobs_repeat_list.lua's reply.
struct repeat_list_reply {
    std::int64_t now_ms = 0;  // the server's time
    std::vector<repeat_entry> repeats;
};
repeat_list_reply decode_repeat_list(const reply& r);

/// jobs_inspect.lua's reply.
struct inspect_reply {
    std::int64_t now_ms = 0;
    job_counts counts;
    std::optional<std::int64_t> oldest_waiting_added_ms;
    std::optional<std::string> scheduler;
    std::optional<std::uint64_t> scheduler_epoch;
    std::vector<repeat_entry> repeats;
    bool paused = false;
    std::vector<group_counts> groups;
};
inspect_reply decode_inspect(const reply& r);

/// A job state's name on the server; throws protocol_error for an unknown one.
job_state parse_job_state(std::string_view s, const char* script);

}  // namespace redcoord::detail
