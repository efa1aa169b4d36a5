#include "fair_scripts.hpp"

#include "scripts.hpp"

#include <redcoord_lua/lock.hpp>

#include <redcoord/core/detail/queue_lua.hpp>

#include <string>

namespace redcoord::detail {

namespace {

// Every fair script may hand out a token or delete a holding, and decides on the queue's head.
std::string with_fragments(const char* body) {
    return std::string(next_fence_lua) + lock_release_notice_lua + queue_head_lua +
           fair_waiters_lua + body;
}

}  // namespace

const script& fair_acquire_script() {
    static const script s(with_fragments(fair_acquire_lua), cluster_publish::sharded);
    return s;
}

const script& fair_release_script() {
    static const script s(with_fragments(fair_release_lua), cluster_publish::sharded);
    return s;
}

const script& fair_leave_script() {
    static const script s(with_fragments(fair_leave_lua), cluster_publish::sharded);
    return s;
}

}  // namespace redcoord::detail
