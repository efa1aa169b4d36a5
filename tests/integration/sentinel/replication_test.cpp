// wait_replicas / replication_barrier against a real master and replica.
#include <redcoord/core/errors.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/core/replication.hpp>
#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

using namespace redcoord;
using namespace std::chrono_literals;
using redcoord::testing::local_server;

TEST(Replication, WaitCountsAcknowledgingReplicas) {
    local_server master;
    auto replica = local_server::replica_of(master);
    connection c(master.endpoint());
    c.command({"SET", "k", "v"});
    // Generous: a freshly synced replica counts for WAIT after its first ACK (up to 1 s).
    EXPECT_EQ(wait_replicas(c, 1, 5000ms), 1u);
    EXPECT_EQ(replica->command({"GET", "k"}).text(), "v");
}

TEST(Replication, BarrierCoversWritesOfOtherConnectionsAndTimesOutWhenReplicaIsStopped) {
    local_server master;
    auto replica = local_server::replica_of(master);
    connection_pool pool(master.endpoint(), {.max_size = 2});
    connection writer(master.endpoint());
    writer.command({"SET", "a", "1"});
    ASSERT_EQ(replication_barrier(pool, 1, 5000ms), 1u);
    EXPECT_EQ(replica->command({"GET", "a"}).text(), "1");

    replica->pause();
    writer.command({"SET", "b", "2"});
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(replication_barrier(pool, 1, 150ms), 0u);
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 140ms);
    replica->resume();
    ASSERT_EQ(replication_barrier(pool, 1, 5000ms), 1u);
    EXPECT_EQ(replica->command({"GET", "b"}).text(), "2");
}

TEST(Replication, BadArgumentsAreRejected) {
    local_server master;
    connection c(master.endpoint());
    connection_pool pool(master.endpoint());
    EXPECT_THROW((void)wait_replicas(c, 1, 0ms), invalid_argument);
    EXPECT_THROW((void)wait_replicas(c, 0, 10ms), invalid_argument);
    EXPECT_THROW((void)replication_barrier(pool, 1, -1ms), invalid_argument);
    // No replica at all: zero acknowledgements after the timeout, not an error.
    EXPECT_EQ(replication_barrier(pool, 1, 20ms), 0u);
}
