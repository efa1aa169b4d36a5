// The limiters' metrics move when they act: refusals counted per kind and name, semaphore
// permits held by this process, and semaphore acquire durations by outcome.

#include "../metrics_support.hpp"

#include <redcoord/limit/rate_limiter.hpp>
#include <redcoord/limit/semaphore.hpp>
#include <redcoord/limit/sliding_window_limiter.hpp>
#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

using namespace std::chrono_literals;
using redcoord::testing::local_server;

TEST(LimitMetrics, RefusalsAreCountedPerKindAndName) {
    local_server server;
    metrics_test::observed_runtime o;
    redcoord::connection_pool pool(server.endpoint(), {}, o.rt);
    redcoord::rate_limiter rate(pool, "m-api", {.rate = 1, .period = 60s});
    EXPECT_TRUE(rate.try_acquire().allowed);
    EXPECT_FALSE(rate.try_acquire().allowed);
    EXPECT_FALSE(rate.try_acquire().allowed);
    redcoord::sliding_window_limiter window(pool, "m-calls", {.limit = 1, .window = 60s});
    EXPECT_TRUE(window.try_acquire().allowed);
    EXPECT_FALSE(window.try_acquire().allowed);
    EXPECT_EQ(o.value("redcoord_rate_limited_total{kind=\"rate\",name=\"m-api\"}"), 2);
    EXPECT_EQ(o.value("redcoord_rate_limited_total{kind=\"window\",name=\"m-calls\"}"), 1);
}

TEST(LimitMetrics, SemaphorePermitsHeldAndAcquireDurations) {
    local_server server;
    metrics_test::observed_runtime o;
    redcoord::connection_pool pool(server.endpoint(), {}, o.rt);
    redcoord::semaphore sem(pool, "m-slots", {.permits = 3, .ttl = 10s});
    const std::string held = "redcoord_semaphore_permits{name=\"m-slots\",state=\"held\"}";
    auto two = sem.try_acquire(2);
    ASSERT_TRUE(two);
    EXPECT_EQ(o.value(held), 2);
    EXPECT_FALSE(sem.try_acquire_for(2, 50ms));
    EXPECT_TRUE(two->release());
    EXPECT_EQ(o.value(held), 0);
    EXPECT_EQ(o.value("redcoord_semaphore_acquire_seconds_count{name=\"m-slots\",outcome="
                      "\"acquired\"}"),
              1);
    EXPECT_EQ(o.value("redcoord_semaphore_acquire_seconds_count{name=\"m-slots\",outcome="
                      "\"timeout\"}"),
              1);
}
