#include <redcoord/queue/acl.hpp>

#include "reliable_scripts.hpp"

namespace redcoord {

acl_needs queue_acl_needs(std::string_view prefix, int db) {
    // Pub/sub for the push notices async_pop listens to.
    acl_needs n = pubsub_acl_needs(false, db);
    n.allow_commands({"publish", "lpush", "rpop", "lpop", "brpop", "blpop", "llen", "lmove",
                      "blmove", "lrem", "lrange", "multi", "sadd", "set", "exec", "wait"});
    for (const script* s : detail::queue_scripts()) n.allow_script(*s);
    n.key_patterns.push_back(prefixed_pattern(prefix, "queue:*"));
    n.channel_patterns.push_back(prefixed_pattern(prefix, "queue:*"));
    return n;
}

acl_needs queue_inspect_acl_needs(std::string_view prefix, int db) {
    acl_needs n = connection_acl_needs(db);
    n.allow_commands({"multi", "exec", "llen", "lindex", "pttl", "smembers", "time"});
    n.key_patterns.push_back(prefixed_pattern(prefix, "queue:*"));
    return n;
}

}  // namespace redcoord
