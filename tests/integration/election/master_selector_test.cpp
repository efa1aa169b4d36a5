#include <redcoord/core/errors.hpp>
#include <redcoord/election/leader_elector.hpp>
#include <redcoord/election/master_selector.hpp>
#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <thread>

using namespace redcoord;
using namespace std::chrono_literals;
using redcoord::testing::local_server;

namespace {
election_options fast(std::string id) {
    election_options o;
    o.identity = std::move(id);
    o.term = 300ms;
    return o;
}
}  // namespace

TEST(MasterSelector, LiveLeaderKeepsWinningHundredRoundsAmongFour) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    std::vector<std::unique_ptr<master_selector>> c;
    for (int i = 0; i < 4; ++i)
        c.push_back(
            std::make_unique<master_selector>(pool, "reelect", fast("c" + std::to_string(i))));

    auto first = c[2]->campaign_once();  // c2 starts first, so it must win
    ASSERT_TRUE(first.leader);
    EXPECT_TRUE(first.new_term);
    EXPECT_GT(first.epoch, 0u);
    std::mt19937 rng(7);
    std::vector<int> order{0, 1, 2, 3};
    for (int round = 0; round < 100; ++round) {
        std::shuffle(order.begin(), order.end(), rng);
        for (int i : order) {
            auto r = c[i]->campaign_once();
            ASSERT_EQ(r.leader, i == 2) << "round " << round << " candidate " << i;
            ASSERT_EQ(r.epoch, first.epoch);
            ASSERT_EQ(r.holder, std::optional<std::string>("c2"));
            ASSERT_FALSE(r.new_term);
        }
    }
    // Followers' increments never refreshed the term: the holder's last round did.
    const auto ttl = srv.command({"PTTL", c[0]->keys().selector}).integer();
    EXPECT_GT(ttl, 0);
    EXPECT_LE(ttl, 300);
}

TEST(MasterSelector, FollowersCannotKeepTheSelectorAliveAndANewLeaderGetsANewEpoch) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    master_selector a(pool, "expiry", fast("a")), b(pool, "expiry", fast("b"));
    const auto first = a.campaign_once();
    ASSERT_TRUE(first.leader);
    // Only b campaigns now: its rounds must not extend a's term, so the selector expires.
    std::optional<campaign_result> won;
    const auto until = std::chrono::steady_clock::now() + 2s;
    while (std::chrono::steady_clock::now() < until) {
        auto r = b.campaign_once();
        if (r.leader) {
            won = r;
            break;
        }
        std::this_thread::sleep_for(20ms);
    }
    ASSERT_TRUE(won);
    EXPECT_TRUE(won->new_term);
    EXPECT_GT(won->epoch, first.epoch);
    auto back = a.campaign_once();
    EXPECT_FALSE(back.leader);
    EXPECT_EQ(back.holder, std::optional<std::string>("b"));
    EXPECT_EQ(a.max_epoch_seen(), won->epoch);
}

TEST(MasterSelector, ResignDeletesOnlyOwnSelectorAndPublishesHandoff) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    election_options o = fast("a");
    o.term = 5s;
    master_selector a(pool, "resign", o), b(pool, "resign", fast("b"));
    const auto first = a.campaign_once();
    ASSERT_TRUE(first.leader);
    EXPECT_FALSE(b.resign());  // not b's to give up
    EXPECT_EQ(a.leader(), std::optional<std::string>("a"));
    EXPECT_TRUE(a.resign());
    EXPECT_EQ(a.leader(), std::nullopt);
    EXPECT_FALSE(a.resign());
    auto r = b.campaign_once();
    EXPECT_TRUE(r.leader);
    EXPECT_GT(r.epoch, first.epoch);  // the counter survived the delete
}

TEST(MasterSelector, EpochNeverRepeatsWhenTheCounterIsLost) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    master_selector a(pool, "floor", fast("a"));
    std::uint64_t last = 0;
    for (int i = 0; i < 3; ++i) {
        const auto r = a.campaign_once();
        ASSERT_TRUE(r.leader);
        EXPECT_GT(r.epoch, last);
        last = r.epoch;
        ASSERT_TRUE(a.resign());
    }
    EXPECT_EQ(a.max_epoch_seen(), last);
    srv.command({"FLUSHALL"});  // as after a failover to an empty replica
    auto r = a.campaign_once();
    ASSERT_TRUE(r.leader);
    EXPECT_GT(r.epoch, last);
    EXPECT_EQ(srv.command({"GET", a.keys().epoch}).text(), std::to_string(r.epoch));
    ASSERT_TRUE(a.resign());
    // An epoch seen above the server clock (the clock stepped back, or the counter was lost on
    // a failover) is a floor for the next leadership too.
    const std::uint64_t high = r.epoch + 1000000000;
    srv.command(
        {"HSET", a.keys().selector, "round", "5", "holder", "x", "epoch", std::to_string(high)});
    srv.command({"PEXPIRE", a.keys().selector, "10000"});
    EXPECT_FALSE(a.campaign_once().leader);
    srv.command({"FLUSHALL"});
    r = a.campaign_once();
    ASSERT_TRUE(r.leader);
    EXPECT_EQ(r.epoch, high + 1);
}

TEST(MasterSelector, OddIdentityAndNameTravelAsArguments) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    const std::string id = "x') redis.call('FLUSHALL') -- \xc3\xbc";
    election_options o = fast(id);
    master_selector a(pool, "n a m e ' \" {x}", o);
    srv.command({"SET", "canary", "1"});
    auto r = a.campaign_once();
    ASSERT_TRUE(r.leader);
    EXPECT_EQ(r.holder, std::optional<std::string>(id));
    EXPECT_EQ(a.leader(), std::optional<std::string>(id));
    EXPECT_EQ(srv.command({"GET", "canary"}).text(), "1");
}

TEST(MasterSelector, ForeignValueAtTheKeyIsAServerError) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    master_selector a(pool, "typed", fast("a"));
    srv.command({"SET", a.keys().selector, "not a hash"});
    EXPECT_THROW((void)a.campaign_once(), reply_error);
}

TEST(MasterSelector, RejectsBadSettingsAtConstruction) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    election_options o;
    o.term = 0ms;
    EXPECT_THROW(master_selector(pool, "x", o), invalid_argument);
    EXPECT_THROW(master_selector(pool, "", {}), invalid_argument);
}

TEST(MasterSelector, UnreachableServerThrowsConnectionError) {
    endpoint ep;
    ep.port = redcoord::testing::free_port();
    connection_pool pool(ep);
    master_selector a(pool, "down", fast("a"));
    EXPECT_THROW((void)a.campaign_once(), connection_error);
}

namespace {
bool eventually_empty(const local_server& srv, std::chrono::milliseconds t) {
    const auto until = std::chrono::steady_clock::now() + t;
    while (srv.command({"DBSIZE"}).integer() != 0) {
        if (std::chrono::steady_clock::now() > until) return false;
        std::this_thread::sleep_for(20ms);
    }
    return true;
}
}  // namespace

// A Lua runtime error after the selector was created (the epoch key is corrupt) must not leave
// the selector without its PEXPIRE: that would block every later election.
TEST(MasterSelector, M9_CorruptEpochKeyNeverLeavesASelectorWithoutTtl) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    master_selector a(pool, "corrupt", fast("a"));
    const auto& k = a.keys();
    for (int kind = 0; kind < 2; ++kind) {
        SCOPED_TRACE(kind == 0 ? "epoch key is not an integer" : "epoch key has the wrong type");
        srv.command({"DEL", k.selector, k.epoch});
        if (kind == 0)
            srv.command({"SET", k.epoch, "not-a-number"});
        else
            srv.command({"HSET", k.epoch, "f", "v"});
        EXPECT_THROW((void)a.campaign_once(), reply_error);
        const auto ttl = srv.command({"PTTL", k.selector}).integer();
        EXPECT_NE(ttl, -1) << "the selector was left without an expiry";
        EXPECT_LE(ttl, 300);
    }
}

// After a resign nothing stays forever; once the counter has expired too, a new process (no
// client floor) still gets a greater epoch, from the server's clock.
TEST(MasterSelector, KeyspaceHygiene_NoKeyWithoutTtlAndEpochsIncreaseAcrossCounterExpiry) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    election_options o = fast("a");
    o.term = 100ms;
    o.retry_period = 30ms;
    o.epoch_ttl = 300ms;
    std::uint64_t last = 0;
    for (int life = 0; life < 3; ++life) {
        SCOPED_TRACE("life " + std::to_string(life));
        master_selector s(pool, "hygiene", o);  // a fresh process each time: its floor is 0
        auto r = s.campaign_once();
        ASSERT_TRUE(r.leader);
        EXPECT_GT(r.epoch, last);
        EXPECT_LT(r.epoch, std::uint64_t{1} << 53);  // exact as a Lua number and a double
        last = r.epoch;
        ASSERT_TRUE(s.campaign_once().leader);  // a renewal
        ASSERT_TRUE(s.resign());
        EXPECT_EQ(srv.keys_without_ttl(), std::vector<std::string>{});
        ASSERT_TRUE(eventually_empty(srv, 3s)) << "the epoch counter never expired";
    }
}

// The selector's TTL-less siblings: none after an elector led and stopped.
TEST(LeaderElectorKeyspace, KeyspaceHygiene_StoppedElectorLeavesOnlyExpiringKeys) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    election_options o = fast("e");
    o.epoch_ttl = 400ms;
    {
        leader_elector e(pool, "hygiene_elector", o);
        e.start();
        const auto until = std::chrono::steady_clock::now() + 3s;
        while (!e.is_leader() && std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(10ms);
        ASSERT_TRUE(e.is_leader());
        std::this_thread::sleep_for(250ms);  // some renewals
        e.stop();
    }
    EXPECT_EQ(srv.keys_without_ttl(), std::vector<std::string>{});
    EXPECT_TRUE(eventually_empty(srv, 3s));
}

// A process restarted with the same configured identity while its old incarnation's selector
// lives (the old one may only be paused) must not share the old epoch: fencing on the epoch
// has to tell the two apart.
TEST(MasterSelector, M12_RestartWithTheSameIdentityGetsAGreaterEpoch) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    master_selector old(pool, "restart", fast("node-1"));
    const auto first = old.campaign_once();
    ASSERT_TRUE(first.leader);
    master_selector restarted(pool, "restart", fast("node-1"));
    std::optional<campaign_result> won;
    const auto until = std::chrono::steady_clock::now() + 2s;
    while (!won && std::chrono::steady_clock::now() < until) {
        auto r = restarted.campaign_once();
        if (r.leader)
            won = r;
        else
            std::this_thread::sleep_for(20ms);
    }
    ASSERT_TRUE(won);
    EXPECT_GT(won->epoch, first.epoch);
    // The old incarnation, back from its pause, does not hold the new one's leadership.
    const auto back = old.campaign_once();
    EXPECT_FALSE(back.leader);
    EXPECT_FALSE(back.holder_is_us);
    EXPECT_EQ(back.epoch, won->epoch);
}

// A leader whose lease ran out locally has stepped down (its on_revoked fired, leader work
// stopped), even though the server still names it holder for up to `drift` longer. Its next
// win is a new term, and so takes a new epoch: epochs are fencing tokens per term, and work
// fenced with the old term's epoch must not pass as work of the new one. (Found by the chaos
// schedule election/leader: the same epoch on two terms of one candidate.)
TEST(MasterSelector, AWinAfterTheLocalLeaseRanOutIsANewTermWithANewEpoch) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    election_options o;
    o.identity = "a";
    o.term = 1000ms;
    o.drift = 500ms;  // the local lease ends half a term before the server's
    o.retry_period = 200ms;
    master_selector a(pool, "relapse", o);
    const auto first = a.campaign_once();
    ASSERT_TRUE(first.leader);
    // Renewed inside the local lease: the same term.
    const auto renewed = a.campaign_once();
    ASSERT_TRUE(renewed.leader);
    EXPECT_FALSE(renewed.new_term);
    EXPECT_EQ(renewed.epoch, first.epoch);
    std::this_thread::sleep_until(renewed.deadline + 50ms);
    ASSERT_EQ(a.leader(), std::optional<std::string>("a"));  // still held on the server
    const auto again = a.campaign_once();
    ASSERT_TRUE(again.leader);
    EXPECT_TRUE(again.new_term);
    EXPECT_GT(again.epoch, first.epoch);
}
