// sliding_window_limiter on a real server: the limit per window, retry_after, cost, and keys
// that expire a window after the last admission.

#include "limit_support.hpp"

#include <redcoord/core/keys.hpp>
#include <redcoord/limit/sliding_window_limiter.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::eventually;
using redcoord::testing::local_server;

TEST(SlidingWindow, AdmitsTheLimitThenRefusesUntilTheOldestLeaves) {
    local_server s;
    connection_pool pool(s.endpoint());
    sliding_window_limiter l(pool, "calls", {.limit = 3, .window = 60s});
    for (std::uint64_t i = 0; i < 3; ++i) {
        const auto r = l.try_acquire();
        ASSERT_TRUE(r.allowed);
        EXPECT_EQ(r.remaining, 2 - i);
    }
    const auto refused = l.try_acquire();
    EXPECT_FALSE(refused.allowed);
    EXPECT_EQ(refused.remaining, 0u);
    EXPECT_GT(refused.retry_after, 50s);
    EXPECT_LE(refused.retry_after, 60s);
    EXPECT_EQ(s.command({"ZCARD", make_key(default_prefix, "window", "calls")}).integer(), 3);
}

TEST(SlidingWindow, UnitsComeBackAfterTheWindow) {
    local_server s;
    connection_pool pool(s.endpoint());
    sliding_window_limiter l(pool, "short", {.limit = 4, .window = 300ms});
    ASSERT_TRUE(l.try_acquire(4).allowed);
    const auto refused = l.try_acquire(2);
    ASSERT_FALSE(refused.allowed);
    const auto r = l.acquire(2, 5s);  // sleeps retry_after, then fits
    EXPECT_TRUE(r.allowed);
    EXPECT_EQ(r.remaining, 2u);
}

TEST(SlidingWindow, KeysExpireAWindowAfterTheLastAdmission) {
    local_server s;
    connection_pool pool(s.endpoint());
    sliding_window_limiter l(pool, "brief", {.limit = 5, .window = 200ms});
    ASSERT_TRUE(l.try_acquire(2).allowed);
    const auto key = make_key(default_prefix, "window", "brief");
    const auto seq = make_key(default_prefix, "window", "brief", "seq");
    EXPECT_GT(s.command({"PTTL", key}).integer(), 0);
    EXPECT_GT(s.command({"PTTL", seq}).integer(), 0);
    EXPECT_TRUE(eventually([&] { return s.command({"EXISTS", key, seq}).integer() == 0; }));
}

TEST(SlidingWindow, ClientsTogetherNeverExceedTheLimitPerWindow) {
    local_server s;
    connection_pool pool(s.endpoint());
    // A window longer than the run: every admission of the run is in one window.
    sliding_window_limiter a(pool, "crowd", {.limit = 25, .window = 60s});
    sliding_window_limiter b(pool, "crowd", {.limit = 25, .window = 60s});
    std::uint64_t allowed = 0;
    for (int i = 0; i < 40; ++i) {
        if (a.try_acquire().allowed) ++allowed;
        if (b.try_acquire(2).allowed) allowed += 2;
    }
    EXPECT_EQ(allowed, 25u);
}
