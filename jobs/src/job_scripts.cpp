// The job_queue's scripts: jobs/src/lua/jobs_*.lua (each file's header gives its keys,
// arguments, reply and cost), each run after the helpers of jobs_prelude.lua it uses. The
// format is published for producers and workers in other languages: docs/jobs-wire.md.
#include "job_scripts.hpp"

#include <redcoord/core/detail/lua_prelude.hpp>
#include <redcoord_lua/jobs.hpp>

#include <string>

namespace redcoord::detail {

namespace {

// Only the helpers the body reaches (core/detail/lua_prelude.hpp): each call of a script runs
// its whole text, and the server's Lua heap keeps every script's copy.
std::string with_prelude(const char* body) { return with_needed_helpers(jobs_prelude_lua, body); }

}  // namespace

const script& job_add_script() {
    static const script s(with_prelude(jobs_add_lua), cluster_publish::sharded);
    return s;
}

const script& job_add_flow_script() {
    static const script s(with_prelude(jobs_add_flow_lua), cluster_publish::sharded);
    return s;
}

const script& job_add2_script() {
    static const script s(with_prelude(jobs_add2_lua), cluster_publish::sharded);
    return s;
}

const script& job_group_limit_script() {
    static const script s(with_prelude(jobs_group_limit_lua), cluster_publish::sharded);
    return s;
}

const script& job_pause_script() {
    static const script s(with_prelude(jobs_pause_lua), cluster_publish::sharded);
    return s;
}

const script& job_claim_script() {
    static const script s(with_prelude(jobs_claim_lua), cluster_publish::sharded);
    return s;
}

const script& job_settle_script() {
    static const script s(with_prelude(jobs_settle_lua), cluster_publish::sharded);
    return s;
}

const script& job_heartbeat_script() {
    static const script s(with_prelude(jobs_heartbeat_lua));
    return s;
}

const script& job_progress_script() {
    static const script s(with_prelude(jobs_progress_lua), cluster_publish::sharded);
    return s;
}

const script& job_cancel_script() {
    static const script s(with_prelude(jobs_cancel_lua), cluster_publish::sharded);
    return s;
}

const script& job_retry_script() {
    static const script s(with_prelude(jobs_retry_lua), cluster_publish::sharded);
    return s;
}

const script& job_get_script() {
    static const script s(with_prelude(jobs_get_lua));
    return s;
}

const script& job_remove_script() {
    static const script s(with_prelude(jobs_remove_lua), cluster_publish::sharded);
    return s;
}

const script& job_clean_script() {
    static const script s(with_prelude(jobs_clean_lua));
    return s;
}

const script& job_repeat_set_script() {
    static const script s(with_prelude(jobs_repeat_set_lua));
    return s;
}

const script& job_repeat_remove_script() {
    static const script s(with_prelude(jobs_repeat_remove_lua));
    return s;
}

const script& job_repeat_list_script() {
    static const script s(with_prelude(jobs_repeat_list_lua));
    return s;
}

const script& job_tick_script() {
    static const script s(with_prelude(jobs_tick_lua), cluster_publish::sharded);
    return s;
}

std::vector<const script*> jobs_scripts() {
    return {&job_add_script(),           &job_claim_script(),       &job_settle_script(),
            &job_heartbeat_script(),     &job_progress_script(),    &job_cancel_script(),
            &job_retry_script(),         &job_get_script(),         &job_remove_script(),
            &job_clean_script(),         &job_pause_script(),       &job_repeat_set_script(),
            &job_repeat_remove_script(), &job_repeat_list_script(), &job_tick_script(),
            &jobs_inspect_script(),      &job_add_flow_script(),    &job_add2_script(),
            &job_group_limit_script()};
}

}  // namespace redcoord::detail
