#include "job_scripts.hpp"

#include <redcoord/election/acl.hpp>
#include <redcoord/jobs/acl.hpp>

namespace redcoord {

acl_needs jobs_acl_needs(std::string_view prefix, int db) {
    acl_needs n = pubsub_acl_needs(false, db);
    n.allow_commands({"zrange", "zcard", "exists", "wait", "publish"});
    for (const script* s :
         {&detail::job_add_script(), &detail::job_claim_script(), &detail::job_settle_script(),
          &detail::job_heartbeat_script(), &detail::job_progress_script(),
          &detail::job_cancel_script(), &detail::job_retry_script(), &detail::job_get_script(),
          &detail::job_remove_script(), &detail::job_clean_script(), &detail::job_pause_script(),
          &detail::job_repeat_set_script(), &detail::job_repeat_remove_script(),
          &detail::job_repeat_list_script(), &detail::job_tick_script(),
          &detail::jobs_inspect_script()})
        n.allow_script(*s);
    n.key_patterns.push_back(prefixed_pattern(prefix, "jobs:*"));
    n.channel_patterns.push_back(prefixed_pattern(prefix, "jobs:*"));
    return n.merge(election_acl_needs(prefix, db));
}

acl_needs jobs_inspect_acl_needs(std::string_view prefix, int db) {
    acl_needs n = connection_acl_needs(db);
    n.allow_script(detail::jobs_inspect_script());
    n.key_patterns.push_back(prefixed_pattern(prefix, "jobs:*"));
    n.key_patterns.push_back(prefixed_pattern(prefix, "election:*"));
    return n;
}

}  // namespace redcoord
