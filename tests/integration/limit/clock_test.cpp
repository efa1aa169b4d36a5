// Issue 35, item 6: the semaphore's permits and the read-write lock's holds keep their leases
// by their runtime's clock, so a test advances the clock instead of sleeping through a TTL of
// a minute (without the clock seam the waits below would fail).

#include <redcoord/core/pool.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/limit/rw_lock.hpp>
#include <redcoord/limit/semaphore.hpp>
#include <redcoord/testing/runtime_server.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::runtime_server;

namespace {

bool soon(const std::function<bool()>& p) { return redcoord::testing::eventually(p, 5s); }

}  // namespace

TEST(LimitClock, APermitsWatchdogExtendsWhenTheClockReachesAThirdOfTheTtl) {
    runtime_server s;
    auto& [srv, rt, pool] = s;
    semaphore sem(pool, "clock-sem", {.permits = 2, .timing = {.ttl = 60s}, .watchdog = true});
    auto p = sem.try_acquire();
    ASSERT_TRUE(p);
    const auto first = p->valid_until();
    rt->clock().advance(10s);
    std::this_thread::sleep_for(200ms);
    EXPECT_EQ(p->valid_until(), first);
    rt->clock().advance(10s + 1ms);
    ASSERT_TRUE(soon([&] { return p->valid_until() >= first + 19s; }));
    EXPECT_FALSE(p->lost());
}

TEST(LimitClock, APermitWithoutAWatchdogIsLostAtItsValidityEndByTheClock) {
    runtime_server s;
    auto& [srv, rt, pool] = s;
    semaphore sem(pool, "clock-sem-lost", {.permits = 1, .timing = {.ttl = 60s}});
    auto p = sem.try_acquire();
    ASSERT_TRUE(p);
    EXPECT_FALSE(p->lost());
    rt->clock().advance(60s);
    EXPECT_TRUE(p->lost());
}

TEST(LimitClock, ARwLocksWatchdogExtendsEveryHoldWhenTheClockAdvances) {
    runtime_server s;
    auto& [srv, rt, pool] = s;
    rw_lock rw(pool, "clock-rw", {.timing = {.ttl = 60s}, .watchdog = true});
    ASSERT_TRUE(rw.try_lock_shared());
    const auto first = rw.valid_until();
    rt->clock().advance(20s + 1ms);
    ASSERT_TRUE(soon([&] { return rw.valid_until() >= first + 19s; }));
    EXPECT_FALSE(rw.lost());
    rw.unlock_shared();
}
