#pragma once
// Sentinel failovers for the fault schedules: a master with a replica watched by three
// sentinels, all in the schedule's local_network, and a loop that makes the sentinels fail the
// master over, by killing it or by cutting it off from them while clients can still reach it.

#include "chaos_common.hpp"

#include <redcoord/testing/local_network.hpp>

#include <chrono>
#include <random>
#include <string>
#include <vector>

namespace chaos {

// The service every schedule's sentinels watch.
inline constexpr const char* chaos_service = "chaos";

// A master, two replicas and three sentinels (quorum 2, down after 500 ms). The schedules'
// clients wait for both replicas (`sentinel_replicas`): WAIT counts any replica, and Sentinel
// may promote the one that did not acknowledge, so fewer would let a failover drop a grant
// (ElectionReplicas.WaitForFewerReplicasThanCouldBePromotedLetsTwoLeadersIn). Two rather than
// one, so that the promoted replica has a replica of its own at once and needs only the old
// master back to meet the WAIT again.
struct sentinel_group {
    std::size_t master = 0;
    std::vector<std::size_t> replicas;
    std::vector<std::size_t> sentinels;
};

// Every replica of the group: what the schedules' clients wait for (WAIT).
inline constexpr std::size_t sentinel_replicas = 2;

[[nodiscard]] sentinel_group add_sentinel_group(redcoord::testing::local_network& net);

// Until `end`, one failover every 2-3 s, of two kinds at random:
// - the master the sentinels name is SIGKILLed, and restarted (without persistence) only once
//   they have promoted its replica, so it rejoins as a replica and forgets nothing that counts
//   (restarted earlier, it would come back empty as the master: the Redlock page's
//   crash-recovery case, which the lock and election schedules show on their own);
// - the master is cut from the sentinels and the other servers, not from the clients, for
//   2.5-3.5 s: the majority side fails over while clients can still write to the old master,
//   which the sentinels turn into a replica when the cut heals.
// Either way the old master is made a replica of the promoted one as soon as it is back (an
// operator's restart script would; Sentinel does it 8 s after it sees the old master claim
// the master role). It has no replica before, so nothing written there counts; sooner only
// gives the promoted master its second replica sooner.
// Counts failovers (each promotion seen), restarts and partitions in `out`.
void sentinel_failovers(redcoord::testing::local_network& net, const sentinel_group& g,
                        std::mt19937& rng, std::chrono::steady_clock::time_point end,
                        outcome_base& out);

}  // namespace chaos
