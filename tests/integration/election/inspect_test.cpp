// inspect_election() against live elections: leader, epoch and term as the candidates see them.

#include <redcoord/core/errors.hpp>
#include <redcoord/election/inspect.hpp>
#include <redcoord/election/leader_elector.hpp>
#include <redcoord/election/master_selector.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::eventually;
using redcoord::testing::local_server;

namespace {
election_options with_identity(std::string id, std::chrono::milliseconds term = 3s) {
    election_options o;
    o.identity = std::move(id);
    o.term = term;
    return o;
}
}  // namespace

TEST(InspectElection, NoElectionShowsNoLeader) {
    local_server s;
    connection_pool pool(s.endpoint());
    const auto v = inspect_election(pool, "none");
    EXPECT_FALSE(v.leader);
    EXPECT_EQ(v.epoch, 0u);
    EXPECT_FALSE(v.term_left);
    EXPECT_FALSE(v.last_epoch);
}

TEST(InspectElection, ShowsTheLeaderItsEpochAndTermLeft) {
    local_server s;
    connection_pool pool(s.endpoint());
    master_selector a(pool, "jobs", with_identity("alpha", 5s));
    master_selector b(pool, "jobs", with_identity("beta", 5s));
    const auto won = a.campaign_once();
    ASSERT_TRUE(won.leader);
    (void)b.campaign_once();  // a losing round counts too
    const auto v = inspect_election(pool, "jobs");
    ASSERT_TRUE(v.leader);
    EXPECT_EQ(*v.leader, "alpha");
    EXPECT_EQ(v.epoch, won.epoch);
    ASSERT_TRUE(v.term_left);
    EXPECT_GT(*v.term_left, 3s);
    EXPECT_LE(*v.term_left, 5s);
    EXPECT_GE(v.rounds, 2u);
    ASSERT_TRUE(v.last_epoch);
    EXPECT_EQ(*v.last_epoch, won.epoch);

    // After a resignation the next leader is beta with a higher epoch.
    ASSERT_TRUE(a.resign());
    EXPECT_FALSE(inspect_election(pool, "jobs").leader);
    const auto next = b.campaign_once();
    ASSERT_TRUE(next.leader);
    const auto w = inspect_election(pool, "jobs");
    EXPECT_EQ(w.leader, std::optional<std::string>("beta"));
    EXPECT_GT(w.epoch, v.epoch);
}

TEST(InspectElection, FollowsARunningElector) {
    local_server s;
    connection_pool pool(s.endpoint());
    leader_elector e(pool, "svc", with_identity("node-1"));
    e.start();
    ASSERT_TRUE(eventually([&] { return e.is_leader(); }, 5s));
    const auto v = inspect_election(pool, "svc");
    EXPECT_EQ(v.leader, std::optional<std::string>("node-1"));
    EXPECT_EQ(v.epoch, e.epoch());
    e.stop();  // stopping resigns
    EXPECT_TRUE(eventually([&] { return !inspect_election(pool, "svc").leader; }, 5s));
}

TEST(InspectElection, BadNameAndCorruptEpoch) {
    local_server s;
    connection_pool pool(s.endpoint());
    EXPECT_THROW((void)inspect_election(pool, ""), invalid_argument);
    s.command({"SET", "redcoord:election:{bad}:epoch", "x1"});
    EXPECT_THROW((void)inspect_election(pool, "bad"), protocol_error);
}
