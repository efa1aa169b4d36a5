#include "reliable_scripts.hpp"

#include <redcoord_lua/queue.hpp>

#include <string>

namespace redcoord::detail {
namespace {

// The scripts that change a message's attempts start with the fragment queue_prelude.lua
// (the envelope of envelope.hpp, read and written byte for byte as decode_envelope does).
std::string with_prelude(const char* body) { return std::string(queue_prelude_lua) + body; }

}  // namespace

// Each script's keys, arguments and reply: queue/src/lua/<name>.lua.

const script& queue_pop_script() {
    static const script s(queue_pop_lua);
    return s;
}

const script& queue_register_script() {
    static const script s(queue_register_lua);
    return s;
}

const script& queue_nack_script() {
    static const script s(with_prelude(queue_nack_lua), cluster_publish::sharded);
    return s;
}

const script& queue_recover_script() {
    static const script s(with_prelude(queue_recover_lua), cluster_publish::sharded);
    return s;
}

const script& queue_release_script() {
    static const script s(with_prelude(queue_release_lua), cluster_publish::sharded);
    return s;
}

const script& queue_retire_idle_script() {
    static const script s(queue_retire_idle_lua);
    return s;
}

const script& queue_requeue_dead_script() {
    static const script s(with_prelude(queue_requeue_dead_lua), cluster_publish::sharded);
    return s;
}

const script& queue_stats_script() {
    static const script s(queue_stats_lua);
    return s;
}

const script& queue_give_back_script() {
    static const script s(queue_give_back_lua, cluster_publish::sharded);
    return s;
}

std::vector<const script*> queue_scripts() {
    return {&queue_pop_script(),          &queue_register_script(), &queue_nack_script(),
            &queue_recover_script(),      &queue_release_script(),  &queue_retire_idle_script(),
            &queue_requeue_dead_script(), &queue_stats_script(),    &queue_give_back_script()};
}

}  // namespace redcoord::detail
