#include <redcoord/core/script.hpp>
#include <redcoord/signaling/acl.hpp>

namespace redcoord {

namespace detail {
const script& unicast_lua();         // signal_hub.cpp
const script& barrier_lua();         // barrier.cpp
const script& double_barrier_lua();  // double_barrier.cpp
const script& latch_lua();           // latch.cpp
}  // namespace detail

acl_needs signaling_acl_needs(std::string_view prefix, const std::vector<std::string>& channels,
                              int db) {
    acl_needs n = pubsub_acl_needs(true, db);
    for (const script* s : {&detail::unicast_lua(), &detail::barrier_lua(),
                            &detail::double_barrier_lua(), &detail::latch_lua()})
        n.allow_script(*s);
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
