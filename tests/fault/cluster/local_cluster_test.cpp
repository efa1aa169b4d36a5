// testing/local_cluster: three masters with a replica each, joined and healthy; keys on the
// master hash_slot() names; a manual failover, a killed master's replica promoted, and a slot
// migrated with -ASK while it moves. Real redis-server processes on loopback ports.

#include <redcoord/core/connection.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/hash_slot.hpp>
#include <redcoord/testing/local_cluster.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <optional>
#include <string>

using namespace std::chrono_literals;
using redcoord::hash_slot;
using redcoord::testing::local_cluster;

namespace {

// The error text of a command that must be refused, or "" when it succeeded.
std::string refusal(const redcoord::testing::local_server& s,
                    std::initializer_list<std::string_view> argv) {
    try {
        (void)s.command(argv);
        return "";
    } catch (const redcoord::reply_error& e) {
        return e.what();
    }
}

}  // namespace

TEST(LocalCluster, StartsHealthyWithThreeMastersEachWithAReplica) {
    local_cluster c;
    ASSERT_EQ(c.size(), 6u);
    for (std::size_t m = 0; m < 3; ++m) {
        EXPECT_TRUE(c.is_master(m));
        EXPECT_EQ(c.replicas_of(m).size(), 1u) << "master " << m;
    }
    for (std::size_t r = 3; r < 6; ++r) EXPECT_FALSE(c.is_master(r));
    EXPECT_EQ(c.seeds().size(), 6u);
    EXPECT_EQ(c.url().rfind("redis-cluster://127.0.0.1:", 0), 0u) << c.url();
    // Slots are split evenly: the first and the last slot on different masters.
    EXPECT_EQ(c.master_of_slot(0), std::optional<std::size_t>(0));
    EXPECT_EQ(c.master_of_slot(16383), std::optional<std::size_t>(2));
    // hash_slot() agrees with the servers, and the master it names takes the key.
    const std::string key = "redcoord:lock:{orders}";
    EXPECT_EQ(c.node(0).command({"CLUSTER", "KEYSLOT", key}).integer(), hash_slot(key));
    const auto m = c.master_of_key(key);
    ASSERT_TRUE(m);
    EXPECT_TRUE(c.node(*m).command({"SET", key, "v"}).is_status("OK"));
    const auto moved = refusal(c.node(c.other_master(*m)), {"SET", key, "v"});
    EXPECT_NE(moved.find("MOVED " + std::to_string(hash_slot(key))), std::string::npos) << moved;
}

TEST(LocalCluster, ManualFailoverMakesTheReplicaTheMasterOfTheSameData) {
    local_cluster c;
    const std::string key = "{failover}k";
    const auto m = *c.master_of_key(key);
    c.node(m).command({"SET", key, "kept"});
    c.node(m).command({"WAIT", "1", "2000"});
    const auto r = c.replicas_of(m).at(0);
    c.failover(r);
    EXPECT_TRUE(c.is_master(r));
    EXPECT_FALSE(c.is_master(m));
    EXPECT_EQ(c.master_of_key(key), std::optional<std::size_t>(r));
    EXPECT_EQ(c.node(r).command({"GET", key}).maybe_text(), std::optional<std::string>("kept"));
    c.wait_healthy();
}

TEST(LocalCluster, AKilledMasterIsReplacedByItsReplicaAndRejoinsAsAReplica) {
    local_cluster c;
    const auto r = c.replicas_of(1).at(0);
    c.node(1).kill();
    EXPECT_EQ(c.wait_promoted(1), r);
    c.node(1).restart();
    c.wait_healthy();
    EXPECT_TRUE(redcoord::testing::eventually([&] { return !c.is_master(1); }, 10s, 20ms));
}

TEST(LocalCluster, AMigratingSlotAnswersAskForKeysItHasMovedThenMovesEverything) {
    local_cluster c;
    const std::string kept = "{migrating}kept", absent = "{migrating}absent";
    const auto slot = hash_slot(kept);
    const auto from = *c.master_of_slot(slot);
    const auto to = c.other_master(from);
    c.node(from).command({"SET", kept, "v"});
    c.begin_migration(slot, to);
    // The source still serves keys it holds, and sends the client on (-ASK) for others.
    EXPECT_EQ(c.node(from).command({"GET", kept}).maybe_text(), std::optional<std::string>("v"));
    const auto ask = refusal(c.node(from), {"GET", absent});
    EXPECT_EQ(ask.rfind("ASK " + std::to_string(slot), 0), 0u) << ask;
    // The target takes the key only after ASKING, on the same connection.
    {
        redcoord::connection conn(c.node(to).endpoint());
        (void)conn.command({"ASKING"});
        EXPECT_TRUE(conn.command({"SET", absent, "w"}).is_status("OK"));
    }
    c.finish_migration(slot);
    EXPECT_EQ(c.master_of_slot(slot), std::optional<std::size_t>(to));
    EXPECT_EQ(c.node(to).command({"GET", kept}).maybe_text(), std::optional<std::string>("v"));
    EXPECT_EQ(c.node(to).command({"GET", absent}).maybe_text(), std::optional<std::string>("w"));
    const auto moved = refusal(c.node(from), {"GET", kept});
    EXPECT_EQ(moved.rfind("MOVED " + std::to_string(slot), 0), 0u) << moved;
}
