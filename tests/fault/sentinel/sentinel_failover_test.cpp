// Real failovers (SIGKILL of the master, SENTINEL FAILOVER) followed by the resolver and pool.
#include <redcoord/core/errors.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/core/sentinel.hpp>
#include <redcoord/core/subscriber.hpp>
#include <redcoord/testing/local_sentinel.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <mutex>
#include <thread>

using namespace redcoord;
using namespace std::chrono_literals;
using redcoord::testing::local_sentinel;
using redcoord::testing::local_sentinel_options;
using clock_type = std::chrono::steady_clock;

namespace {

std::string role_of(connection& c) { return c.command({"ROLE"}).elements().at(0).text(); }

// Retries `f` until it succeeds or `within` passes; returns whether it succeeded.
template <class F>
bool eventually(std::chrono::milliseconds within, F f) {
    auto deadline = clock_type::now() + within;
    while (clock_type::now() < deadline) {
        try {
            if (f()) return true;
        } catch (const error&) {}
        std::this_thread::sleep_for(10ms);
    }
    return false;
}

}  // namespace

// Sentinel promotes within down_after + election + promotion; 20 s is generous slack for a
// loaded 2-core box (a split vote retries after 2 x failover_timeout).
constexpr auto failover_bound = 20s;

TEST(SentinelFailover, PoolFollowsAKilledMaster) {
    local_sentinel svc;
    connection_pool pool(svc.endpoint(), {.max_size = 4});
    ASSERT_TRUE(pool.command({"SET", "before", "1"}).is_status("OK"));
    ASSERT_TRUE(pool.command({"WAIT", "1", "1000"}).integer() >= 1);
    std::vector<std::pair<host_port, host_port>> changes;
    std::mutex mu;
    auto conn = pool.sentinel()->on_master_changed([&](const host_port& a, const host_port& b) {
        std::lock_guard lk(mu);
        changes.emplace_back(a, b);
    });

    auto old = svc.kill_master();
    auto promoted = svc.wait_promoted(old, failover_bound);
    ASSERT_NE(promoted, old);
    // Commands through the pool succeed again once Sentinel has promoted the replica.
    ASSERT_TRUE(eventually(failover_bound, [&] {
        return pool.command({"SET", "after", "1"}).is_status("OK");
    }));
    EXPECT_EQ(pool.command({"GET", "before"}).text(), "1");  // it was replicated before the kill
    auto c = pool.borrow();
    EXPECT_EQ(c->where().port, promoted.port);
    EXPECT_EQ(role_of(*c), "master");
    EXPECT_EQ(pool.sentinel()->cached_master(), std::optional<host_port>(promoted));
    EXPECT_GE(pool.sentinel()->switches(), 1u);
    std::lock_guard lk(mu);
    ASSERT_FALSE(changes.empty());
    EXPECT_EQ(changes.front().first, old);
    EXPECT_EQ(changes.back().second, promoted);
}

TEST(SentinelFailover, ManualFailoverDemotesTheOldMasterAndThePoolMoves) {
    local_sentinel svc;
    connection_pool pool(svc.endpoint(), {.max_size = 4});
    ASSERT_TRUE(pool.command({"SET", "k", "1"}).is_status("OK"));
    auto old = svc.failover();
    auto now_master = svc.wait_switched(old, failover_bound);
    ASSERT_NE(now_master, old);
    // The pool ends up writing to the new master, never stuck on READONLY from the old one.
    ASSERT_TRUE(eventually(failover_bound, [&] {
        auto c = pool.borrow();
        return c->command({"SET", "k", "2"}).is_status("OK") && c->where().port == now_master.port;
    }));
    EXPECT_EQ(svc.server(now_master)->command({"GET", "k"}).text(), "2");
}

TEST(SentinelFailover, RoleCheckRejectsADemotedMasterAndResolvesAgain) {
    local_sentinel svc;
    // No notifications: the resolver keeps the old address until ROLE proves it wrong.
    sentinel_resolver r(svc.endpoint(), {.follow_notifications = false});
    auto first = r.master();
    ASSERT_EQ(first, svc.master_address());
    auto old = svc.failover();
    auto now_master = svc.wait_switched(old, failover_bound);
    // Sentinel turns the old master into a replica at its next INFO refresh (up to 10 s);
    // do what it would do, now, and wait until the old master really is a replica.
    svc.server(old)->replicate(*svc.server(now_master));
    ASSERT_TRUE(eventually(failover_bound, [&] {
        auto c = connection(svc.server(old)->endpoint());
        return role_of(c) == "slave";
    }));
    EXPECT_EQ(r.cached_master(), std::optional<host_port>(old));
    auto c = r.connect(5s);
    EXPECT_EQ(c.where().port, now_master.port);
    EXPECT_EQ(role_of(c), "master");
    EXPECT_EQ(r.cached_master(), std::optional<host_port>(now_master));
}

TEST(SentinelFailover, ManyBorrowersAcrossAFailoverAllRecover) {
    local_sentinel svc;
    connection_pool pool(svc.endpoint(), {.max_size = 8});
    ASSERT_TRUE(pool.command({"PING"}).is_status("PONG"));
    const auto rounds_before = pool.sentinel()->rounds();
    std::atomic<bool> stop{false};
    std::atomic<int> ok_after{0};
    std::atomic<bool> killed{false};
    std::vector<std::thread> ts;
    for (int i = 0; i < 8; ++i)
        ts.emplace_back([&, i] {
            while (!stop) {
                try {
                    if (pool.command({"INCR", "n" + std::to_string(i)}).is_integer() && killed)
                        ++ok_after;
                } catch (const error&) {
                    std::this_thread::sleep_for(5ms);
                }
            }
        });
    std::this_thread::sleep_for(200ms);
    auto old = svc.kill_master();
    killed = true;
    (void)svc.wait_promoted(old, failover_bound);
    bool recovered = eventually(failover_bound, [&] { return ok_after.load() > 100; });
    stop = true;
    for (auto& t : ts) t.join();
    EXPECT_TRUE(recovered);
    // No thundering herd: 8 borrowers retrying in a loop for the whole outage share one
    // resolver whose rounds are spaced by its backoff (unshared, they would be thousands).
    const auto rounds = pool.sentinel()->rounds() - rounds_before;
    EXPECT_LE(rounds, 100u);
    std::cout << "[sentinel] rounds of sentinel questions during the failover: " << rounds << "\n";
}

TEST(SentinelFailover, SubscriberOnASentinelEndpointMovesToTheNewMaster) {
    local_sentinel svc;
    std::mutex mu;
    std::vector<std::string> got;
    subscriber sub(svc.endpoint(), [&](const pubsub_message& m) {
        std::lock_guard lk(mu);
        got.push_back(m.payload);
    });
    ASSERT_TRUE(sub.subscribe({"news"}, 5s));
    connection_pool pool(svc.endpoint());
    EXPECT_EQ(pool.command({"PUBLISH", "news", "before"}).integer(), 1);

    auto old = svc.kill_master();
    auto promoted = svc.wait_promoted(old, failover_bound);
    // Once resubscribed on the promoted master, a publish there reaches the subscriber.
    ASSERT_TRUE(eventually(failover_bound, [&] {
        return sub.connected() && pool.command({"PUBLISH", "news", "after"}).integer() == 1;
    }));
    ASSERT_TRUE(eventually(5s, [&] {
        std::lock_guard lk(mu);
        return std::find(got.begin(), got.end(), "after") != got.end();
    }));
    EXPECT_EQ(
        svc.server(promoted)->command({"PUBSUB", "NUMSUB", "news"}).elements().at(1).integer(), 1);
    EXPECT_GE(sub.connects(), 2u);
}
