#include "scripts.hpp"

#include "fair_scripts.hpp"

#include <redcoord_lua/lock.hpp>

#include <string>

namespace redcoord::detail {

const script& acquire_script() {
    static const script s(std::string(next_fence_lua) + lock_release_notice_lua +
                              lock_raise_fence_lua + lock_acquire_lua,
                          cluster_publish::sharded);
    return s;
}

const script& release_script() {
    static const script s(
        std::string(lock_release_notice_lua) + lock_raise_fence_lua + lock_release_lua,
        cluster_publish::sharded);
    return s;
}

const script& extend_script() {
    static const script s(lock_extend_lua);
    return s;
}

std::vector<const script*> lock_scripts() {
    return {&acquire_script(),      &release_script(),      &extend_script(),
            &fair_acquire_script(), &fair_release_script(), &fair_leave_script()};
}

}  // namespace redcoord::detail
