// rate_limiter on a real server: burst then refusal with retry_after, acquire() sleeping
// exactly retry_after (no polling), giving up early, idle keys expiring, and several clients
// never getting more than burst + rate * t on the server's clock.

#include "limit_support.hpp"

#include <redcoord/core/keys.hpp>
#include <redcoord/limit/rate_limiter.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::eventually;
using redcoord::testing::local_server;

TEST(RateLimiter, AdmitsTheBurstThenRefusesWithRetryAfter) {
    local_server s;
    connection_pool pool(s.endpoint());
    rate_limiter l(pool, "api", {.rate = 10, .burst = 5});
    for (int i = 0; i < 5; ++i) {
        const auto r = l.try_acquire();
        ASSERT_TRUE(r.allowed) << i;
        EXPECT_EQ(r.retry_after, 0us);
    }
    const auto refused = l.try_acquire();
    EXPECT_FALSE(refused.allowed);
    EXPECT_EQ(refused.remaining, 0u);
    EXPECT_GT(refused.retry_after, 0us);
    EXPECT_LE(refused.retry_after, 100ms);  // one interval at most
    EXPECT_GT(refused.reset_after, 0us);
    EXPECT_LE(refused.reset_after, 500ms);
}

TEST(RateLimiter, CostCountsSeveralUnits) {
    local_server s;
    connection_pool pool(s.endpoint());
    rate_limiter l(pool, "bytes", {.rate = 1, .period = 10s, .burst = 10});
    const auto big = l.try_acquire(7);
    ASSERT_TRUE(big.allowed);
    EXPECT_EQ(big.remaining, 3u);
    const auto refused = l.try_acquire(4);
    EXPECT_FALSE(refused.allowed);
    EXPECT_EQ(refused.remaining, 3u);
    EXPECT_GT(refused.retry_after, 9s);  // one more unit: one interval (10 s), less the time since
    EXPECT_TRUE(l.try_acquire(3).allowed);
}

TEST(RateLimiter, AcquireSleepsRetryAfterInsteadOfPolling) {
    local_server s;
    connection_pool pool(s.endpoint());
    rate_limiter l(pool, "sleepy", {.rate = 5, .burst = 1});  // one per 200 ms
    ASSERT_TRUE(l.try_acquire().allowed);
    const auto before = limit_test::script_calls(s);
    const auto r = l.acquire(1, 5s);
    EXPECT_TRUE(r.allowed);
    // One refused attempt, a sleep of its retry_after, one admitted attempt. A loaded machine
    // may need one more round (the server's clock and ours tick apart); a poller needs dozens.
    EXPECT_LE(limit_test::script_calls(s) - before, 3);
}

TEST(RateLimiter, AcquireGivesUpAtOnceWhenTheWaitCannotCoverRetryAfter) {
    local_server s;
    connection_pool pool(s.endpoint());
    rate_limiter l(pool, "slow", {.rate = 1, .period = 60s});
    ASSERT_TRUE(l.try_acquire().allowed);
    const auto started = std::chrono::steady_clock::now();
    const auto r = l.acquire(1, 2s);
    EXPECT_FALSE(r.allowed);
    EXPECT_GT(r.retry_after, 50s);
    EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);  // did not sleep the wait out
}

TEST(RateLimiter, IdleLimiterLeavesNoKey) {
    local_server s;
    connection_pool pool(s.endpoint());
    rate_limiter l(pool, "idle", {.rate = 100, .burst = 20});  // full again 10 ms per unit
    ASSERT_TRUE(l.try_acquire(10).allowed);
    const auto key = make_key(default_prefix, "rate", "idle");
    const auto pttl = s.command({"PTTL", key}).integer();
    EXPECT_GT(pttl, 0);
    EXPECT_LE(pttl, 100);
    EXPECT_TRUE(eventually([&] { return s.command({"EXISTS", key}).integer() == 0; }));
    // Gone means full: the whole burst passes again.
    EXPECT_TRUE(l.try_acquire(20).allowed);
}

TEST(RateLimiter, RefusalWritesNothing) {
    local_server s;
    connection_pool pool(s.endpoint());
    rate_limiter l(pool, "still", {.rate = 1, .period = 60s});
    ASSERT_TRUE(l.try_acquire().allowed);
    const auto key = make_key(default_prefix, "rate", "still");
    const auto value = s.command({"GET", key}).text();
    for (int i = 0; i < 5; ++i) EXPECT_FALSE(l.try_acquire().allowed);
    EXPECT_EQ(s.command({"GET", key}).text(), value);
}

TEST(RateLimiter, ClientsTogetherNeverExceedBurstPlusRateTimesServerTime) {
    local_server s;
    connection_pool pool(s.endpoint());
    const double rate = 200;
    const std::uint64_t burst = 10;
    std::atomic<std::uint64_t> allowed{0};
    std::atomic<bool> stop{false};
    const auto t0 = limit_test::server_us(s);
    std::vector<std::thread> clients;
    for (int c = 0; c < 4; ++c)
        clients.emplace_back([&] {
            // Each client its own object, as separate processes would have.
            rate_limiter l(pool, "shared", {.rate = rate, .burst = burst});
            while (!stop)
                if (l.try_acquire().allowed) ++allowed;
        });
    std::this_thread::sleep_for(1500ms);
    stop = true;
    for (auto& t : clients) t.join();
    const auto t1 = limit_test::server_us(s);
    const double bound = static_cast<double>(burst) + rate * static_cast<double>(t1 - t0) / 1e6;
    EXPECT_LE(static_cast<double>(allowed.load()), bound);
    EXPECT_GE(allowed.load(), burst);  // and they did get through
}
