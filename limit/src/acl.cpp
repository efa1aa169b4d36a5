#include <redcoord/limit/acl.hpp>

#include "limit_scripts.hpp"

namespace redcoord {

acl_needs limit_acl_needs(std::string_view prefix, int db) {
    acl_needs n = pubsub_acl_needs(false, db);
    for (const script* s :
         {&detail::gcra_script(), &detail::window_log_script(), &detail::semaphore_acquire_script(),
          &detail::semaphore_release_script(), &detail::semaphore_extend_script(),
          &detail::semaphore_leave_script()})
        n.allow_script(*s);
    n.allow_commands({"wait"});  // semaphore_options::replicas
    for (const char* kind : {"rate:*", "window:*", "semaphore:*"})
        n.key_patterns.push_back(prefixed_pattern(prefix, kind));
    n.channel_patterns.push_back(prefixed_pattern(prefix, "semaphore:*"));
    n.merge(rw_lock_acl_needs(prefix, db));
    return n;
}

acl_needs rw_lock_acl_needs(std::string_view prefix, int db) {
    acl_needs n = pubsub_acl_needs(false, db);
    for (const script* s : {&detail::rwlock_read_script(), &detail::rwlock_write_script(),
                            &detail::rwlock_release_script(), &detail::rwlock_extend_script(),
                            &detail::rwlock_leave_script()})
        n.allow_script(*s);
    n.key_patterns.push_back(prefixed_pattern(prefix, "rwlock:*"));
    n.channel_patterns.push_back(prefixed_pattern(prefix, "rwlock:*"));
    return n;
}

acl_needs limit_inspect_acl_needs(std::string_view prefix, int db) {
    acl_needs n = connection_acl_needs(db);
    n.allow_commands({"multi", "exec", "time", "get", "pttl", "zrange"});
    for (const char* kind : {"rate:*", "window:*", "semaphore:*", "rwlock:*"})
        n.key_patterns.push_back(prefixed_pattern(prefix, kind));
    return n;
}

}  // namespace redcoord
