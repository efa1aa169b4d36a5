// The limiters through a redis-sentinel:// endpoint (the read-write lock and the rate limiter
// on the master Sentinel names, the writer woken through the resolved link). The semaphore: it works on the master Sentinel names,
// its waiters are woken through the Sentinel-resolved pub/sub link, and with
// semaphore_options::replicas the permits held survive a failover (the promoted replica counts
// them, so no more than N are handed out), while without it a grant the replicas never got is
// lost with the master and handed out again (the failover race of the Redlock page).
#include "failover_faults.hpp"

#include <redcoord/core/errors.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/limit/rate_limiter.hpp>
#include <redcoord/limit/rw_lock.hpp>
#include <redcoord/limit/semaphore.hpp>
#include <redcoord/testing/local_sentinel.hpp>

#include <gtest/gtest.h>

#include <future>
#include <optional>
#include <thread>

using namespace redcoord;
using namespace std::chrono_literals;
using redcoord::testing::local_sentinel;
using redcoord::testing::local_sentinel_options;
using clock_type = std::chrono::steady_clock;

TEST(SemaphoreSentinel, HandsOutNPermitsAndWakesAWaiterThroughASentinelEndpoint) {
    local_sentinel svc;
    connection_pool pool(svc.endpoint());
    semaphore sem(pool, "slots", {.permits = 2, .timing = {.ttl = 30s}});
    auto a = sem.try_acquire();
    auto b = sem.try_acquire();
    ASSERT_TRUE(a && b);
    EXPECT_FALSE(sem.try_acquire());
    EXPECT_EQ(
        svc.master().command({"ZCARD", make_key(default_prefix, "semaphore", "slots")}).integer(),
        2);
    // A waiter is woken by the release (its TTL is far away), through the resolved link.
    auto waiter = std::async(std::launch::async, [&] { return sem.try_acquire_for(1, 20s); });
    std::this_thread::sleep_for(200ms);
    const auto released_at = clock_type::now();
    EXPECT_TRUE(a->release());
    auto got = waiter.get();
    ASSERT_TRUE(got);
    EXPECT_LT(clock_type::now() - released_at, 10s);
    EXPECT_GT(got->fencing_token(), b->fencing_token());
}

TEST(SemaphoreSentinel, ReplicatedPermitsSurviveAFailover) {
    local_sentinel_options o;
    o.replicas = 2;  // the promoted master keeps a replica to WAIT for
    local_sentinel svc(o);
    connection_pool pool(svc.endpoint());
    semaphore sem(
        pool, "slots",
        {.permits = 2, .timing = {.ttl = 60s}, .replication = {.replicas = 1, .timeout = 500ms}});
    auto a = sem.try_acquire();
    auto b = sem.try_acquire();
    ASSERT_TRUE(a && b);
    const auto old = svc.kill_master();
    (void)svc.wait_switched(old);
    // The promoted master has both permits: nothing more is handed out, whichever way asked.
    bool answered = false;
    const auto until = clock_type::now() + 20s;
    while (!answered && clock_type::now() < until) {
        try {
            EXPECT_FALSE(sem.try_acquire());
            answered = true;
        } catch (const error&) {
            std::this_thread::sleep_for(100ms);  // the pool is still moving to the new master
        }
    }
    ASSERT_TRUE(answered);
    EXPECT_EQ(
        svc.master().command({"ZCARD", make_key(default_prefix, "semaphore", "slots")}).integer(),
        2);
    // The holders' releases reach the new master.
    EXPECT_TRUE(a->release());
    EXPECT_TRUE(sem.try_acquire());
}

TEST(SemaphoreSentinel, WithReplicasAGrantTheReplicasMissedIsGivenBackWithoutItHandedOutTwice) {
    local_sentinel_options o;
    o.replicas = 2;
    local_sentinel svc(o);
    connection_pool pool_a(svc.endpoint()), pool_b(svc.endpoint());
    const semaphore_options plain_opts{.permits = 1, .timing = {.ttl = 60s}};
    semaphore replicated(
        pool_a, "one",
        {.permits = 1, .timing = {.ttl = 60s}, .replication = {.replicas = 1, .timeout = 300ms}});
    semaphore plain(pool_a, "one", plain_opts);
    semaphore b(pool_b, "one", plain_opts);
    std::optional<permit> held_plain;
    {
        sentinel_test::replication_cut cut(svc);
        // No replica acknowledges: refused, and the permit given back at once.
        EXPECT_FALSE(replicated.try_acquire());
        // Without the option the master grants it, and only the master has it.
        held_plain = plain.try_acquire();
        ASSERT_TRUE(held_plain);
        (void)cut.kill_master_and_resume();
    }
    std::optional<permit> held_b;
    ASSERT_TRUE(sentinel_test::eventually_ok(20s, [&] {
        return (held_b = b.try_acquire()).has_value();
    })) << "B found no free permit on the promoted master";
    // The race: two holders of one permit, both within their validity.
    EXPECT_FALSE(held_plain->lost());
    EXPECT_FALSE(held_b->lost());
}

TEST(LimitSentinel, RwLockAndRateLimiterWorkOnTheMasterTheSentinelsName) {
    local_sentinel svc;
    connection_pool pool(svc.endpoint());
    rw_lock rw(pool, "doc", {.timing = {.ttl = 30s}});
    rw_lock writer(pool, "doc", {.timing = {.ttl = 30s}});
    rw.lock_shared();
    EXPECT_FALSE(writer.try_lock());
    // The writer waits for the reader's release, woken through the Sentinel-resolved link.
    auto waiting = std::async(std::launch::async, [&] { return writer.try_lock_for(20s); });
    std::this_thread::sleep_for(200ms);
    rw.unlock_shared();
    ASSERT_TRUE(waiting.get());
    writer.unlock();

    rate_limiter limit(pool, "api", {.rate = 10, .period = 1s, .burst = 3});
    int allowed = 0;
    for (int i = 0; i < 5; ++i) allowed += limit.try_acquire().allowed ? 1 : 0;
    EXPECT_EQ(allowed, 3);  // the burst, on the server's clock
    EXPECT_EQ(svc.master().command({"EXISTS", make_key(default_prefix, "rate", "api")}).integer(),
              1);  // on the master the sentinels name
}
