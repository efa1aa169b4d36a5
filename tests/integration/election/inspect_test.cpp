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

// Issue 38: the dashboard and `inspect election` list the candidates, not only the leader.
TEST(InspectElection, ListsTheCandidatesUntilTheirTermEnds) {
    local_server s;
    connection_pool pool(s.endpoint());
    master_selector a(pool, "cands", with_identity("alpha", 5s));
    master_selector b(pool, "cands", with_identity("beta", 5s));
    master_selector c(pool, "cands", with_identity("gamma", 300ms));
    ASSERT_TRUE(a.campaign_once().leader);
    (void)b.campaign_once();
    (void)c.campaign_once();
    auto v = inspect_election(pool, "cands");
    ASSERT_EQ(v.candidates.size(), 3u);
    // Soonest to drop out first: gamma's 300 ms term, then alpha's and beta's 5 s terms.
    EXPECT_EQ(v.candidates[0].identity, "gamma");
    EXPECT_EQ(v.candidates[1].identity, "alpha");
    EXPECT_EQ(v.candidates[2].identity, "beta");
    for (const auto& cand : v.candidates) {
        EXPECT_GT(cand.expires_in, 0ms) << cand.identity;
        EXPECT_LE(cand.expires_in, 5s) << cand.identity;
    }
    EXPECT_LE(v.candidates[0].expires_in, 300ms);

    // gamma stops campaigning: it drops out once its term has ended, with no round needed.
    ASSERT_TRUE(
        eventually([&] { return inspect_election(pool, "cands").candidates.size() == 2; }, 3s));
    // The leader resigns: it leaves the list at once; beta stays.
    ASSERT_TRUE(a.resign());
    v = inspect_election(pool, "cands");
    ASSERT_EQ(v.candidates.size(), 1u);
    EXPECT_EQ(v.candidates[0].identity, "beta");
    // A later round puts a candidate back.
    (void)a.campaign_once();
    EXPECT_EQ(inspect_election(pool, "cands").candidates.size(), 2u);
    // Rounds drop ended entries from the key (a candidate that never comes back), and the key
    // expires a term after the last round.
    (void)s.command({"ZADD", a.keys().candidates, "1000", "ghost"});
    (void)b.campaign_once();
    EXPECT_EQ(s.command({"ZSCORE", a.keys().candidates, "ghost"}).is_nil(), true);
    const auto ttl = s.command({"PTTL", a.keys().candidates}).integer();
    EXPECT_GT(ttl, 0);
    EXPECT_LE(ttl, 5000);
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
