// The limit part as a least-privilege ACL user: a user created from exactly limit_acl_needs()
// runs rate_limiter, sliding_window_limiter and semaphore (waits woken by a release, extend,
// the watchdog); a user missing a command their scripts call gets permission_error naming it.

#include <redcoord/limit/acl.hpp>
#include <redcoord/limit/rate_limiter.hpp>
#include <redcoord/limit/semaphore.hpp>
#include <redcoord/limit/sliding_window_limiter.hpp>
#include <redcoord/testing/local_server.hpp>

#include "../acl_support.hpp"

#include <gtest/gtest.h>

#include <future>
#include <thread>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::expect_refused;
using redcoord::testing::local_server;
using redcoord::testing::make_acl_user;
using redcoord::testing::without_command;

TEST(LimitAcl, EveryLimiterWorksWithExactlyItsNeeds) {
    local_server s;
    connection_pool pool(make_acl_user(s, "limit-user", limit_acl_needs()));
    rate_limiter rate(pool, "api", {.rate = 10, .burst = 2});
    EXPECT_TRUE(rate.try_acquire(2).allowed);
    EXPECT_FALSE(rate.try_acquire().allowed);
    sliding_window_limiter window(pool, "calls", {.limit = 1, .window = 60s});
    EXPECT_TRUE(window.try_acquire().allowed);
    EXPECT_FALSE(window.try_acquire().allowed);
    semaphore sem(pool, "slots", {.permits = 1, .ttl = 30s, .watchdog = true});
    auto held = sem.try_acquire();
    ASSERT_TRUE(held);
    EXPECT_TRUE(held->extend());
    auto waiter = std::async(std::launch::async, [&] { return sem.try_acquire_for(1, 10s); });
    std::this_thread::sleep_for(200ms);
    EXPECT_TRUE(held->release());
    EXPECT_TRUE(waiter.get());
}

TEST(LimitAcl, MissingScriptCommandIsNamed) {
    local_server s;
    connection_pool pool(
        make_acl_user(s, "limit-no-zadd", without_command(limit_acl_needs(), "zadd")));
    sliding_window_limiter window(pool, "calls", {.limit = 1, .window = 60s});
    (void)expect_refused("zadd", 5s, [&] { (void)window.try_acquire(); });
}
