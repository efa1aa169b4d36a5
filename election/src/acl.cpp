#include "election_scripts.hpp"

#include <redcoord/core/script.hpp>
#include <redcoord/election/acl.hpp>

#include <vector>

namespace redcoord {

acl_needs election_acl_needs(std::string_view prefix, int db) {
    acl_needs n = pubsub_acl_needs(false, db);
    for (const script* s : detail::election_scripts()) n.allow_script(*s);
    // HGET: leader_elector::leader(); HMGET and PTTL: `redcoord leader` and `observe`.
    n.allow_commands({"hget", "hmget", "pttl", "wait"});
    n.key_patterns.push_back(prefixed_pattern(prefix, "election:*"));
    n.channel_patterns.push_back(prefixed_pattern(prefix, "election:*"));
    return n;
}

acl_needs election_inspect_acl_needs(std::string_view prefix, int db) {
    acl_needs n = connection_acl_needs(db);
    n.allow_commands({"multi", "exec", "get", "hmget", "pttl", "time", "zrange"});
    n.key_patterns.push_back(prefixed_pattern(prefix, "election:*"));
    return n;
}

}  // namespace redcoord
