#include "signaling_scripts.hpp"

#include <redcoord/core/script.hpp>
#include <redcoord/signaling/acl.hpp>

namespace redcoord {

namespace detail {
std::vector<const script*> signaling_scripts() {
    return {&unicast_script(), &barrier_script(), &double_barrier_script(), &latch_script()};
}
}  // namespace detail

acl_needs signaling_acl_needs(std::string_view prefix, const std::vector<std::string>& channels,
                              int db) {
    acl_needs n = pubsub_acl_needs(true, db);
    for (const script* s : detail::signaling_scripts()) n.allow_script(*s);
    n.allow_commands({"publish", "set", "get"});
    for (std::string_view kind : {"barrier:*", "double_barrier:*", "latch:*"}) {
        n.key_patterns.push_back(prefixed_pattern(prefix, kind));
        n.channel_patterns.push_back(prefixed_pattern(prefix, kind));
    }
    n.channel_patterns.push_back(prefixed_pattern(prefix, "unicast:*"));
    // On a cluster unicast's script names the channel's unicast prefix as its key (it routes
    // the call to the prefix's shard; no such key is read or written), and ACL checks it.
    n.key_patterns.push_back(prefixed_pattern(prefix, "unicast:*"));
    acl_needs user;
    user.channel_patterns = channels;
    return n.merge(user);
}

acl_needs signaling_inspect_acl_needs(std::string_view prefix, int db) {
    acl_needs n = connection_acl_needs(db);
    n.allow_commands({"multi", "exec", "hmget", "zrange", "time"});
    n.key_patterns.push_back(prefixed_pattern(prefix, "barrier:*"));
    return n;
}

}  // namespace redcoord
