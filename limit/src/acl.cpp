#include <redcoord/limit/acl.hpp>

#include "limit_scripts.hpp"

namespace redcoord {

acl_needs limit_acl_needs(std::string_view prefix, int db) {
    acl_needs n = pubsub_acl_needs(false, db);
    for (const script* s :
         {&detail::gcra_script(), &detail::window_log_script(), &detail::semaphore_acquire_script(),
          &detail::semaphore_release_script(), &detail::semaphore_extend_script()})
        n.allow_script(*s);
    for (const char* kind : {"rate:*", "window:*", "semaphore:*"})
        n.key_patterns.push_back(prefixed_pattern(prefix, kind));
    n.channel_patterns.push_back(prefixed_pattern(prefix, "semaphore:*"));
    return n;
}

}  // namespace redcoord
