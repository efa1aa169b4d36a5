// Primitives through a `redis-cluster://` pool across the cluster's own faults (issue 19): the
// master of their slot SIGKILLed (its replica promoted by the cluster), a manual failover and
// a paused master.

#include <redcoord/core/cluster.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/hash_slot.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/queue/reliable_queue.hpp>
#include <redcoord/testing/local_cluster.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::eventually;
using redcoord::testing::local_cluster;

namespace {

// Acquire then release within `within`, riding out errors (a failover in progress).
bool lock_works(distributed_lock& l, std::chrono::milliseconds within) {
    return eventually(
        [&] {
            try {
                if (!l.acquire(0ms)) return false;
                l.release();
                return true;
            } catch (const error&) {
                return false;
            }
        },
        within, 20ms);
}

}  // namespace

TEST(ClusterFailover, KilledMastersReplicaTakesOverWithNothingAckedLost) {
    local_cluster c;
    connection_pool pool(parse_endpoint(c.url()));
    const auto lock_name = c.key_on(0, "lock-");
    const auto queue_name = c.key_on(0, "queue-");
    // No WAIT here: once its master is dead the shard has no replica left to acknowledge.
    distributed_lock l(pool, lock_name, {.ttl = 2s});
    reliable_queue_options qo;
    qo.replicas = 1;  // an acknowledged push is on the shard's replica
    reliable_queue q(pool, queue_name, qo);
    std::vector<std::string> pushed;
    for (int i = 0; i < 50; ++i) pushed.push_back("m" + std::to_string(i));
    ASSERT_EQ(q.push_batch(pushed).size(), 50u);
    ASSERT_TRUE(lock_works(l, 2s));

    c.node(0).kill();
    const auto promoted = c.wait_promoted(0);
    EXPECT_TRUE(c.is_master(promoted));
    EXPECT_TRUE(lock_works(l, 10s));
    std::set<std::string> got;
    ASSERT_TRUE(eventually(
        [&] {
            try {
                while (auto d = q.pop(100ms)) {
                    got.insert(d->payload);
                    (void)q.ack(*d);
                }
            } catch (const error&) {}
            return got.size() == pushed.size();
        },
        15s, 20ms));
    EXPECT_EQ(pool.slot_map()->master_of(hash_slot(lock_name))->port, c.node(promoted).port());
}

TEST(ClusterFailover, ManualFailoverIsFollowedWithoutAFailedCall) {
    local_cluster c;
    connection_pool pool(parse_endpoint(c.url()));
    const auto name = c.key_on(1, "manual-");
    distributed_lock l(pool, name, {.ttl = 2s});
    ASSERT_TRUE(lock_works(l, 2s));
    const auto replicas = c.replicas_of(1);
    ASSERT_FALSE(replicas.empty());
    c.failover(replicas.front());
    // The old master is a replica now and answers MOVED: followed within the same call.
    auto got = l.acquire(0ms);
    ASSERT_TRUE(got);
    EXPECT_TRUE(l.release());
    EXPECT_EQ(pool.slot_map()->master_of(hash_slot(name))->port, c.node(replicas.front()).port());
}

TEST(ClusterFailover, PausedMasterCostsTimeoutsThenServesAgain) {
    local_cluster c;
    auto ep = parse_endpoint(c.url());
    ep.command_timeout = 300ms;
    connection_pool pool(ep);
    const auto name = c.key_on(2, "paused-");
    distributed_lock l(pool, name, {.ttl = 2s});
    ASSERT_TRUE(lock_works(l, 2s));
    c.node(2).pause();
    const auto start = std::chrono::steady_clock::now();
    bool got = false;
    try {
        got = l.acquire(0ms).has_value();  // not acquired, or a typed error
    } catch (const error&) {}
    EXPECT_FALSE(got);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);  // bounded by the command timeout
    c.node(2).resume();
    EXPECT_TRUE(lock_works(l, 10s));
}
