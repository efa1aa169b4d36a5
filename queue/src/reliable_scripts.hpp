#pragma once
// The reliable_queue's Lua scripts. Keys and values arrive as KEYS/ARGV only. The recovery,
// release and stats scripts also touch the processing and heartbeat keys of the consumers
// they find in the consumer set; those keys are built from a prefix passed in ARGV and share
// the queue's hash tag, so they live in the same Cluster slot.

#include <redcoord/core/script.hpp>

#include <vector>

namespace redcoord::detail {

const script& queue_pop_script();          // renew the lease, then LMOVE
const script& queue_register_script();     // SADD consumer + SET heartbeat PX ttl
const script& queue_nack_script();         // attempts + 1, requeue / dead, then LREM the element
const script& queue_recover_script();      // reclaim every expired consumer's processing list
const script& queue_release_script();      // reclaim this consumer's list and unregister
const script& queue_retire_idle_script();  // unregister a consumer whose list is empty
const script& queue_requeue_dead_script();
const script& queue_stats_script();
const script& queue_give_back_script();  // a cancelled async pop's move, back to the head

// All of the above: for the ACL rules and the test that loads every script on a server.
std::vector<const script*> queue_scripts();

}  // namespace redcoord::detail
