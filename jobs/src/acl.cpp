#include "job_scripts.hpp"

#include <redcoord/election/acl.hpp>
#include <redcoord/jobs/acl.hpp>

namespace redcoord {

acl_needs jobs_acl_needs(std::string_view prefix, int db) {
    acl_needs n = pubsub_acl_needs(false, db);
    n.allow_commands({"zrange", "zcard", "get", "exists", "wait", "publish"});
    for (const script* s : detail::jobs_scripts()) n.allow_script(*s);
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
