// The shared pub/sub link follows its master's replicas: found by ROLE, listened on, and
// dropped when they leave, so a listener still hears a channel through a replica while the
// master link is down.
#include <redcoord/core/detail/pubsub_mux.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

// A namespace of its own: a unity batch compiles this file with others (tests/CMakeLists.txt).
namespace replicas_test {

using namespace redcoord;
using namespace std::chrono_literals;
using redcoord::testing::eventually;
using redcoord::testing::local_server;
using redcoord::testing::master_and_replica;
using clock_type = std::chrono::steady_clock;

namespace {
long long numsub(const local_server& srv, const std::string& ch) {
    return srv.command({"PUBSUB", "NUMSUB", ch}).elements().at(1).integer();
}
}  // namespace

TEST(PubsubReplicas, TheSharedLinkFindsTheReplicasAndHearsThroughThemWhenTheMasterDies) {
    master_and_replica s;
    auto rt = runtime::create();
    auto mux = rt->pubsub(s.master.endpoint());
    std::atomic<int> got{0};
    auto l = mux->listen("ch", {[&](const pubsub_message&) { ++got; }, {}});
    ASSERT_TRUE(l.wait_confirmed(3s));
    ASSERT_TRUE(
        eventually([&] { return mux->replicas().size() == 1 && numsub(*s.replica, "ch") == 1; }));
    EXPECT_EQ(mux->replicas().front().port, s.replica->port());
    // A publish on the master reaches the listener once per link: master and replica.
    s.master.command({"PUBLISH", "ch", "x"});
    EXPECT_TRUE(eventually([&] { return got.load() == 2; }));
    s.master.kill();
    // With the master gone, the replica's own publishes still arrive.
    s.replica->command({"PUBLISH", "ch", "y"});
    EXPECT_TRUE(eventually([&] { return got.load() == 3; }));
    EXPECT_TRUE(l.wait_confirmed(1s));  // confirmed on the replica while the master is down
}

TEST(PubsubReplicas, AReplicaThatLeavesIsDropped) {
    master_and_replica s;
    auto rt = runtime::create();
    auto mux = std::make_shared<detail::pubsub_mux>(
        s.master.endpoint(), rt, detail::pubsub_mux_options{.replica_refresh = 100ms});
    auto l = mux->listen("ch", {[](const pubsub_message&) {}, {}});
    ASSERT_TRUE(eventually([&] { return mux->replicas().size() == 1; }));
    s.replica->promote();  // no longer in the master's ROLE reply
    EXPECT_TRUE(eventually([&] { return mux->replicas().empty(); }));
    EXPECT_TRUE(eventually([&] { return numsub(*s.replica, "ch") == 0; }));
}

TEST(PubsubReplicas, ReplicasGivenByHandStayAndNewChannelsReachThem) {
    local_server master, other;  // `other` is no replica of anyone: given by hand it still counts
    auto rt = runtime::create();
    auto mux = std::make_shared<detail::pubsub_mux>(
        master.endpoint(), rt, detail::pubsub_mux_options{.replica_refresh = 100ms});
    auto a = mux->listen("a", {[](const pubsub_message&) {}, {}});
    mux->add_replica(other.endpoint());
    mux->add_replica(other.endpoint());  // the same address twice: one link
    auto b = mux->listen("b", {[](const pubsub_message&) {}, {}});
    EXPECT_TRUE(eventually([&] { return numsub(other, "a") == 1 && numsub(other, "b") == 1; }));
    std::this_thread::sleep_for(300ms);  // refreshes that do not list it keep it
    EXPECT_EQ(mux->replicas().size(), 1u);
    b.reset();
    EXPECT_TRUE(eventually([&] { return numsub(other, "b") == 0; }));
}

TEST(PubsubReplicas, FollowingCanBeTurnedOff) {
    master_and_replica s;
    auto rt = runtime::create();
    auto mux = std::make_shared<detail::pubsub_mux>(
        s.master.endpoint(), rt, detail::pubsub_mux_options{.follow_replicas = false});
    auto l = mux->listen("ch", {[](const pubsub_message&) {}, {}});
    ASSERT_TRUE(l.wait_confirmed(3s));
    std::this_thread::sleep_for(200ms);
    EXPECT_TRUE(mux->replicas().empty());
    EXPECT_EQ(numsub(*s.replica, "ch"), 0);
}

}  // namespace replicas_test
