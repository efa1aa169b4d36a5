// Several processes over real servers: broadcast fan-out with master+replica links, and a
// barrier reused across processes.
#include <redcoord/core/pool.hpp>
#include <redcoord/signaling/signal_hub.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/process.hpp>

#include <gtest/gtest.h>

#include <thread>

using namespace std::chrono_literals;
using redcoord::testing::local_server;
using redcoord::testing::process;

namespace {

TEST(MultiProcess, BroadcastReachesFiftyWaitersInFourProcessesOnceEach) {
    local_server master;
    auto replica = local_server::replica_of(master);
    const std::string m = master.url(), r = replica->url();
    // The master streams commands to the replica only once it counts it online.
    for (int i = 0;
         i < 500 &&
         master.command({"INFO", "replication"}).text().find("state=online") == std::string::npos;
         ++i)
        std::this_thread::sleep_for(10ms);
    constexpr int signals = 20;
    const int per_child[] = {13, 13, 12, 12};
    std::vector<process> kids;
    for (int n : per_child)
        kids.emplace_back(std::vector<std::string>{CHILD_PATH, "waiters", m, r, "fan",
                                                   std::to_string(n), std::to_string(signals),
                                                   "ready"});
    for (int i = 0; i < 1500; ++i) {
        auto v = master.command({"GET", "ready"}).maybe_text();
        if (v && *v == "4") break;
        for (auto& k : kids) ASSERT_FALSE(k.try_wait()) << "a child gave up before it was ready";
        std::this_thread::sleep_for(10ms);
    }
    ASSERT_EQ(master.command({"GET", "ready"}).maybe_text().value_or("0"), "4");
    redcoord::connection_pool pool(master.endpoint());
    redcoord::signal_hub hub(pool);
    for (int k = 0; k < signals; ++k) EXPECT_EQ(hub.broadcast("fan", std::to_string(k)), 4u);
    for (auto& k : kids) {
        auto st = k.wait_for(30000ms);
        ASSERT_TRUE(st);
        EXPECT_EQ(*st, 0);
    }
}

TEST(MultiProcess, BarrierOfEightProcessesReusedAHundredTimes) {
    local_server master;
    std::vector<process> kids;
    for (int i = 0; i < 8; ++i)
        kids.emplace_back(
            std::vector<std::string>{CHILD_PATH, "barrier", master.url(), "eight", "8", "100"});
    for (auto& k : kids) {
        auto st = k.wait_for(60000ms);
        ASSERT_TRUE(st);
        EXPECT_EQ(*st, 0);
    }
    EXPECT_EQ(master.command({"HGET", "redcoord:barrier:{eight}", "gen"}).text(), "100");
}

}  // namespace
