#include "limit_scripts.hpp"

#include <redcoord_lua/limit.hpp>

#include <redcoord/core/detail/fence_lua.hpp>
#include <redcoord/core/detail/queue_lua.hpp>

#include <string>

namespace redcoord::detail {

const script& gcra_script() {
    static const script s(gcra_lua);
    return s;
}

const script& window_log_script() {
    static const script s(window_log_lua);
    return s;
}

// The semaphore's scripts publish releases: sharded on a cluster, where the waiters listen.
const script& semaphore_acquire_script() {
    static const script s(std::string(next_fence_lua) + queue_head_lua + semaphore_acquire_lua,
                          cluster_publish::sharded);
    return s;
}

const script& semaphore_leave_script() {
    static const script s(semaphore_leave_lua, cluster_publish::sharded);
    return s;
}

const script& semaphore_release_script() {
    static const script s(semaphore_release_lua, cluster_publish::sharded);
    return s;
}

const script& semaphore_extend_script() {
    static const script s(semaphore_extend_lua, cluster_publish::sharded);
    return s;
}

// The rw_lock's scripts publish releases too (sharded on a cluster).
const script& rwlock_read_script() {
    static const script s(std::string(next_fence_lua) + rwlock_read_lua, cluster_publish::sharded);
    return s;
}

const script& rwlock_write_script() {
    static const script s(std::string(next_fence_lua) + rwlock_write_lua, cluster_publish::sharded);
    return s;
}

const script& rwlock_release_script() {
    static const script s(rwlock_release_lua, cluster_publish::sharded);
    return s;
}

const script& rwlock_extend_script() {
    static const script s(rwlock_extend_lua, cluster_publish::sharded);
    return s;
}

const script& rwlock_leave_script() {
    static const script s(rwlock_leave_lua, cluster_publish::sharded);
    return s;
}

std::vector<const script*> limit_scripts() {
    return {&gcra_script(),
            &window_log_script(),
            &semaphore_acquire_script(),
            &semaphore_release_script(),
            &semaphore_extend_script(),
            &semaphore_leave_script(),
            &rwlock_read_script(),
            &rwlock_write_script(),
            &rwlock_release_script(),
            &rwlock_extend_script(),
            &rwlock_leave_script()};
}

}  // namespace redcoord::detail
