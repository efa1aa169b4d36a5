// Issue 35, item 6: the elector decides its rounds and its term's end by its runtime's clock,
// so a test advances the clock instead of sleeping through a term. The terms are a minute
// long: without the clock seam each step below would be 20 s to 60 s away, and the tests'
// few-second waits would fail.

#include <redcoord/core/keys.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/election/leader_elector.hpp>
#include <redcoord/election/master_selector.hpp>
#include <redcoord/testing/runtime_server.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::eventually;
using redcoord::testing::runtime_server;

namespace {

election_options minute_term(std::string id) {
    election_options o;
    o.identity = std::move(id);
    o.term = 60s;  // a round every 20 s
    return o;
}

}  // namespace

TEST(ElectionClock, ALeaderRenewsOnceThePeriodHasPassedByTheClock) {
    runtime_server s;
    auto& [srv, rt, pool] = s;
    leader_elector e(pool, "clock-renew", minute_term("a"));
    e.start();
    ASSERT_TRUE(eventually([&] { return e.is_leader(); }, 5s));
    const auto first_deadline = *e.deadline();
    const auto rounds = e.rounds();
    const auto key = make_key(default_prefix, "election", "clock-renew");
    ASSERT_EQ(srv.command({"PEXPIRE", key, "30000"}).integer(), 1);
    // Half a period by the clock: no round.
    rt->clock().advance(10s);
    std::this_thread::sleep_for(200ms);
    EXPECT_EQ(e.rounds(), rounds);
    // The period: the renewal goes out at once and sets the whole term again on the server.
    rt->clock().advance(10s + 1ms);
    ASSERT_TRUE(eventually([&] { return e.rounds() > rounds; }, 5s));
    ASSERT_TRUE(eventually([&] { return srv.command({"PTTL", key}).integer() > 50000; }, 5s));
    ASSERT_TRUE(eventually([&] { return e.deadline() && *e.deadline() > first_deadline; }, 5s));
    // The new deadline is counted from the renewal, on the advanced clock.
    EXPECT_GE(*e.deadline(), first_deadline + 20s);
    EXPECT_TRUE(e.is_leader());
    e.stop();
}

TEST(ElectionClock, ALeaderCutOffStepsDownAtItsTermEndBeforeTheKeyExpires) {
    runtime_server s(200ms);  // the renewals against the stopped server
    auto& [srv, rt, pool] = s;
    leader_elector e(pool, "clock-cut", minute_term("a"));
    std::atomic<int> revoked{0};
    auto c = e.on_revoked([&](revoke_reason) { ++revoked; });
    e.start();
    ASSERT_TRUE(eventually([&] { return e.is_leader(); }, 5s));
    auto leadership = e.current_leadership();
    ASSERT_FALSE(leadership.stop.stop_requested());
    srv.pause();
    // Each period's renewal times out; at the term's end by the clock the leader steps down,
    // while the server still keeps its key for most of a minute.
    for (int i = 0; i < 3; ++i) {
        rt->clock().advance(20s + 1ms);
        std::this_thread::sleep_for(50ms);
    }
    // is_leader() reads the clock; the leader work's stop token follows from the timer's tick.
    ASSERT_TRUE(eventually([&] { return !e.is_leader(); }, 5s));
    ASSERT_TRUE(eventually([&] { return leadership.stop.stop_requested(); }, 5s));
    ASSERT_TRUE(eventually([&] { return revoked.load() == 1; }, 5s));
    srv.resume();
    EXPECT_GT(srv.command({"PTTL", make_key(default_prefix, "election", "clock-cut")}).integer(),
              50000);
    e.stop();
}

TEST(ElectionClock, AFollowerCampaignsEachPeriodByTheClock) {
    runtime_server s;
    auto& [srv, rt, pool] = s;
    // Another process leads (its own runtime, whose clock does not move).
    auto other_rt = runtime::create();
    connection_pool other_pool(srv.endpoint(), {}, other_rt);
    leader_elector leader(other_pool, "clock-follow", minute_term("leader"));
    leader.start();
    ASSERT_TRUE(eventually([&] { return leader.is_leader(); }, 5s));
    leader_elector follower(pool, "clock-follow", minute_term("follower"));
    follower.start();
    ASSERT_TRUE(eventually([&] { return follower.rounds() >= 1; }, 5s));
    const auto rounds = follower.rounds();
    for (int i = 1; i <= 3; ++i) {
        rt->clock().advance(20s + 1ms);
        ASSERT_TRUE(eventually([&] { return follower.rounds() >= rounds + i; }, 5s)) << i;
    }
    EXPECT_FALSE(follower.is_leader());
    EXPECT_TRUE(leader.is_leader());
    follower.stop();
    leader.stop();
}
