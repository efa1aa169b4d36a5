// The slot map's parsers (CLUSTER SHARDS and CLUSTER SLOTS, shaped as Redis 7.0 answers over
// RESP2) and the MOVED / ASK reader, without a server.
#include <redcoord/core/cluster.hpp>
#include <redcoord/core/errors.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace redcoord;

namespace {

reply str(std::string s) { return reply::make_text(reply::kind::string, std::move(s)); }
reply num(std::int64_t v) { return reply::make_integer(v); }
reply arr(std::vector<reply> v) { return reply::make_array(std::move(v)); }

reply node(const std::string& ip, std::int64_t port, const std::string& role,
           const std::string& health = "online", const std::string& endpoint = "") {
    return arr({str("id"), str("0123abcd"), str("port"), num(port), str("ip"), str(ip),
                str("endpoint"), str(endpoint.empty() ? ip : endpoint), str("role"), str(role),
                str("replication-offset"), num(42), str("health"), str(health)});
}

reply shard(std::vector<std::int64_t> ranges, std::vector<reply> nodes) {
    std::vector<reply> slots;
    for (auto v : ranges) slots.push_back(num(v));
    return arr({str("slots"), arr(std::move(slots)), str("nodes"), arr(std::move(nodes))});
}

const host_port asked{"10.0.0.9", 7009};

}  // namespace

TEST(ClusterMap, ShardsGiveEachSlotItsMasterAndLiveReplicas) {
    const auto m = cluster_map::from_shards(
        arr({shard({0, 5460},
                   {node("10.0.0.1", 7000, "master"), node("10.0.0.4", 7003, "replica")}),
             shard({5461, 10922, 16000, 16383},
                   {node("10.0.0.5", 7004, "replica", "failed"), node("10.0.0.2", 7001, "master")}),
             shard({10923, 15999}, {node("10.0.0.3", 7002, "master", "online", "?"),
                                    node("10.0.0.6", 7005, "replica", "loading")}),
             shard({}, {node("10.0.0.7", 7006, "master")})}),
        asked);
    ASSERT_EQ(m.shards().size(), 3u);  // the slotless master is left out
    EXPECT_TRUE(m.covers_all_slots());
    EXPECT_EQ(*m.master_of(0), (host_port{"10.0.0.1", 7000}));
    EXPECT_EQ(*m.master_of(5460), (host_port{"10.0.0.1", 7000}));
    EXPECT_EQ(*m.master_of(5461), (host_port{"10.0.0.2", 7001}));
    EXPECT_EQ(*m.master_of(16383), (host_port{"10.0.0.2", 7001}));
    // endpoint "?" falls back to the ip field.
    EXPECT_EQ(*m.master_of(12000), (host_port{"10.0.0.3", 7002}));
    // Redis 7.0 calls a replica of an idle shard "loading" (offset 0): it is live.
    EXPECT_EQ(m.shard_of(12000)->replicas, (std::vector<host_port>{{"10.0.0.6", 7005}}));
    EXPECT_EQ(m.shard_of(0)->replicas, (std::vector<host_port>{{"10.0.0.4", 7003}}));
    EXPECT_TRUE(m.shard_of(6000)->replicas.empty());  // its replica failed
    EXPECT_EQ(m.master_of(cluster_slots), nullptr);
}

TEST(ClusterMap, AFailedOldMasterGivesWayToTheLiveOne) {
    const auto m = cluster_map::from_shards(
        arr({shard({0, 16383}, {node("10.0.0.1", 7000, "master", "failed"),
                                node("10.0.0.4", 7003, "master", "online")})}),
        asked);
    EXPECT_EQ(*m.master_of(100), (host_port{"10.0.0.4", 7003}));
}

TEST(ClusterMap, UnknownAddressMeansTheNodeAsked) {
    const auto m = cluster_map::from_shards(
        arr({shard({0, 16383}, {node("", 7000, "master", "online", "")})}), asked);
    EXPECT_EQ(*m.master_of(1), (host_port{"10.0.0.9", 7000}));
}

TEST(ClusterMap, TlsClustersAreReachedOnTheirTlsPort) {
    auto n = arr({str("id"), str("x"), str("port"), num(7000), str("tls-port"), num(7100),
                  str("ip"), str("10.0.0.1"), str("endpoint"), str("10.0.0.1"), str("role"),
                  str("master"), str("health"), str("online")});
    const auto r = arr({shard({0, 16383}, {n})});
    EXPECT_EQ(cluster_map::from_shards(r, asked, true).master_of(5)->port, 7100);
    EXPECT_EQ(cluster_map::from_shards(r, asked, false).master_of(5)->port, 7000);
}

TEST(ClusterMap, PartialCoverageIsReported) {
    const auto m =
        cluster_map::from_shards(arr({shard({0, 100}, {node("10.0.0.1", 7000, "master")})}), asked);
    EXPECT_FALSE(m.covers_all_slots());
    EXPECT_EQ(m.master_of(101), nullptr);
    EXPECT_FALSE(cluster_map().covers_all_slots());
}

TEST(ClusterMap, SlotsReplyGroupsRangesByMaster) {
    auto n = [](const std::string& ip, std::int64_t port) {
        return arr({str(ip), num(port), str("id")});
    };
    const auto m = cluster_map::from_slots(
        arr({arr({num(0), num(99), n("10.0.0.1", 7000), n("10.0.0.4", 7003)}),
             arr({num(100), num(16283), n("", 7001)}),
             arr({num(16284), num(16383), n("10.0.0.1", 7000)})}),
        asked);
    ASSERT_EQ(m.shards().size(), 2u);
    EXPECT_TRUE(m.covers_all_slots());
    EXPECT_EQ(m.shards()[0].slots, (std::vector<slot_range>{{0, 99}, {16284, 16383}}));
    EXPECT_EQ(m.shards()[0].replicas, (std::vector<host_port>{{"10.0.0.4", 7003}}));
    EXPECT_EQ(*m.master_of(200), (host_port{"10.0.0.9", 7001}));
}

TEST(ClusterMap, MovedSlotsAreRoutedAtOnce) {
    auto m = cluster_map::from_shards(arr({shard({0, 16383}, {node("10.0.0.1", 7000, "master")})}),
                                      asked);
    m.move_slot(42, {"10.0.0.2", 7001});
    EXPECT_EQ(*m.master_of(42), (host_port{"10.0.0.2", 7001}));
    EXPECT_EQ(*m.master_of(43), (host_port{"10.0.0.1", 7000}));
    m.move_slot(43, {"10.0.0.2", 7001});
    EXPECT_EQ(m.shards().size(), 2u);  // one new shard for the new master, not one per slot
}

TEST(ClusterMap, MalformedRepliesAreProtocolErrors) {
    EXPECT_THROW((void)cluster_map::from_shards(str("OK"), asked), protocol_error);
    EXPECT_THROW((void)cluster_map::from_shards(arr({arr({str("slots"), arr({num(1)})})}), asked),
                 protocol_error);
    EXPECT_THROW((void)cluster_map::from_shards(
                     arr({shard({0, 16384}, {node("10.0.0.1", 7000, "master")})}), asked),
                 protocol_error);
    EXPECT_THROW((void)cluster_map::from_shards(
                     arr({shard({9, 3}, {node("10.0.0.1", 7000, "master")})}), asked),
                 protocol_error);
    EXPECT_THROW((void)cluster_map::from_shards(
                     arr({shard({0, 3}, {node("10.0.0.1", 7000, "replica")})}), asked),
                 protocol_error);
    EXPECT_THROW((void)cluster_map::from_slots(arr({arr({num(0), num(1)})}), asked),
                 protocol_error);
    EXPECT_THROW((void)cluster_map::from_slots(
                     arr({arr({num(0), num(1), arr({str("h"), num(-1)})})}), asked),
                 protocol_error);
}

TEST(ClusterRedirect, ReadsMovedAndAsk) {
    auto m = parse_redirect("MOVED 3999 127.0.0.1:6381");
    ASSERT_TRUE(m);
    EXPECT_FALSE(m->ask);
    EXPECT_EQ(m->slot, 3999);
    EXPECT_EQ(m->to, (host_port{"127.0.0.1", 6381}));
    auto a = parse_redirect("ASK 16383 ::1:7002");
    ASSERT_TRUE(a);
    EXPECT_TRUE(a->ask);
    EXPECT_EQ(a->to, (host_port{"::1", 7002}));
    auto unknown_host = parse_redirect("MOVED 1 :7000");
    ASSERT_TRUE(unknown_host);
    EXPECT_EQ(unknown_host->to.host, "");
}

TEST(ClusterRedirect, OtherTextIsNoRedirect) {
    for (const char* t : {"ERR unknown command", "MOVED", "MOVED 1", "MOVED 16384 h:1",
                          "MOVED x h:1", "ASK 1 h", "ASK 1 h:0", "ASK 1 h:70000", "MOVED 1 h:",
                          "TRYAGAIN Multiple keys request during rehashing of slot", "moved 1 h:1"})
        EXPECT_FALSE(parse_redirect(t)) << t;
}
