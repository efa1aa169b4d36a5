// The limiters' metrics move when they act: refusals counted per kind and name, semaphore
// permits held by this process, semaphore acquire durations by outcome, and the rw_lock's
// holds, acquire durations by mode and outcome, and losses.

#include "../metrics_support.hpp"

#include <redcoord/limit/rate_limiter.hpp>
#include <redcoord/limit/rw_lock.hpp>
#include <redcoord/limit/semaphore.hpp>
#include <redcoord/limit/sliding_window_limiter.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/wait.hpp>

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
    redcoord::semaphore sem(pool, "m-slots", {.permits = 3, .timing = {.ttl = 10s}});
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

TEST(LimitMetrics, RwLockHoldsAcquireDurationsAndLosses) {
    local_server server;
    metrics_test::observed_runtime o;
    redcoord::connection_pool pool(server.endpoint(), {}, o.rt);
    redcoord::rw_lock a(pool, "m-doc", {.timing = {.ttl = 10s}}),
        b(pool, "m-doc", {.timing = {.ttl = 10s}});
    const std::string reads = "redcoord_rwlock_holds{name=\"m-doc\",mode=\"read\"}";
    const std::string writes = "redcoord_rwlock_holds{name=\"m-doc\",mode=\"write\"}";
    ASSERT_TRUE(a.try_lock_shared());
    ASSERT_TRUE(a.try_lock_shared());
    EXPECT_EQ(o.value(reads), 2);
    EXPECT_FALSE(b.try_lock_for(50ms));
    a.unlock_shared();
    a.unlock_shared();
    EXPECT_EQ(o.value(reads), 0);
    ASSERT_TRUE(b.try_lock());
    EXPECT_EQ(o.value(writes), 1);
    b.unlock();
    EXPECT_EQ(o.value(writes), 0);
    EXPECT_EQ(o.value("redcoord_rwlock_acquire_seconds_count{name=\"m-doc\",mode=\"read\","
                      "outcome=\"acquired\"}"),
              2);
    EXPECT_EQ(o.value("redcoord_rwlock_acquire_seconds_count{name=\"m-doc\",mode=\"write\","
                      "outcome=\"timeout\"}"),
              1);
    EXPECT_EQ(o.value("redcoord_rwlock_acquire_seconds_count{name=\"m-doc\",mode=\"write\","
                      "outcome=\"acquired\"}"),
              1);
    // A hold whose lease lapses unextended is counted lost once on_lost watches it.
    redcoord::rw_lock c(pool, "m-lapsed", {.timing = {.ttl = 200ms}});
    auto watch = c.on_lost([](const std::string&) {});
    ASSERT_TRUE(c.try_lock());
    EXPECT_TRUE(redcoord::testing::eventually([&] {
        return o.value("redcoord_lock_lost_total{kind=\"rw_lock\",name=\"m-lapsed\"}") == 1;
    }));
    c.unlock();
}
