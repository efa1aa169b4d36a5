#include <redcoord/lock/acl.hpp>

#include "fair_scripts.hpp"
#include "scripts.hpp"

namespace redcoord {

acl_needs lock_acl_needs(std::string_view prefix, int db) {
    acl_needs n = pubsub_acl_needs(false, db);
    for (const script* s : detail::lock_scripts()) n.allow_script(*s);
    n.allow_commands({"wait"});
    n.key_patterns.push_back(prefixed_pattern(prefix, "lock:*"));
    n.channel_patterns.push_back(prefixed_pattern(prefix, "lock:*"));
    return n;
}

acl_needs lock_inspect_acl_needs(std::string_view prefix, int db) {
    acl_needs n = connection_acl_needs(db);
    n.allow_commands({"multi", "exec", "get", "lrange", "pttl"});
    n.key_patterns.push_back(prefixed_pattern(prefix, "lock:*"));
    return n;
}

}  // namespace redcoord
