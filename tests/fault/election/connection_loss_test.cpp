// A leader that loses its Redis server steps down by its local deadline, on its own.

#include "../../integration/election/event_log.hpp"

#include <redcoord/election/leader_elector.hpp>
#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

#include <thread>

using namespace redcoord;
using namespace std::chrono_literals;
using election_test::event_log;
using redcoord::testing::local_server;
using clk = std::chrono::steady_clock;

namespace {
election_options opts(std::chrono::milliseconds term) {
    election_options o;
    o.identity = "solo";
    o.term = term;
    return o;
}
}  // namespace

TEST(ElectionConnectionLoss, PausedServerLeaderStepsDownByItsLocalDeadline) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    const auto term = 600ms;
    leader_elector e(pool, "paused", opts(term));
    event_log log(e);
    e.start();
    ASSERT_TRUE(log.wait_for('E', 1, 3s));
    const auto epoch = e.epoch();
    std::this_thread::sleep_for(300ms);
    const auto paused_at = clk::now();
    srv.pause();  // SIGSTOP: the socket stays open, nothing answers
    // Every confirmed round was sent before the pause, so its deadline is before
    // paused_at + term - drift: past that instant is_leader() must be false, whatever the
    // campaign thread is blocked on.
    std::this_thread::sleep_until(paused_at + term);
    EXPECT_FALSE(e.is_leader());
    EXPECT_EQ(e.epoch(), 0u);
    ASSERT_TRUE(log.wait_for('R', 1, 2s));
    auto ev = log.events();
    auto r = std::find_if(ev.begin(), ev.end(), [](auto& x) { return x.kind == 'R'; });
    EXPECT_EQ(r->reason, revoke_reason::connection);
    // Delivered at the deadline, not when the blocked round's 2 s command timeout fires.
    EXPECT_LT(r->at - paused_at, term + 1000ms);
    std::this_thread::sleep_for(300ms);
    srv.resume();
    ASSERT_TRUE(log.wait_for('E', 2, 5s));  // the selector expired meanwhile: a new term
    EXPECT_TRUE(e.is_leader());
    EXPECT_GT(e.epoch(), epoch);
    EXPECT_TRUE(election_test::paired(log.events()));
}

TEST(ElectionConnectionLoss, KilledServerLeaderStepsDownAndReturnsAfterRestart) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    const auto term = 600ms;
    leader_elector e(pool, "killed", opts(term));
    event_log log(e);
    e.start();
    ASSERT_TRUE(log.wait_for('E', 1, 3s));
    const auto killed_at = clk::now();
    srv.kill();
    std::this_thread::sleep_until(killed_at + term);
    EXPECT_FALSE(e.is_leader());
    ASSERT_TRUE(log.wait_for('R', 1, 2s));
    EXPECT_EQ(log.events().back().reason, revoke_reason::connection);
    srv.restart();
    ASSERT_TRUE(log.wait_for('E', 2, 5s));
    EXPECT_TRUE(election_test::paired(log.events()));
}

TEST(ElectionConnectionLoss, OneKilledClientLinkDoesNotEndLeadership) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    leader_elector e(pool, "blip", opts(1500ms));
    event_log log(e);
    e.start();
    ASSERT_TRUE(log.wait_for('E', 1, 3s));
    srv.command({"CLIENT", "KILL", "TYPE", "normal"});  // drops the pooled link (and this one's)
    std::this_thread::sleep_for(1500ms);
    EXPECT_TRUE(e.is_leader());
    EXPECT_EQ(log.count('R'), 0u);
    EXPECT_EQ(log.count('E'), 1u);
}
