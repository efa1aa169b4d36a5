// Issue 35, item 6: the double barrier's heartbeat comes due by its runtime's clock: one
// refresh per arrival_lease / 3 of that clock, also after the clock was advanced (a heartbeat
// due time taken from another clock would be "past" at every tick after an advance: a spin).

#include <redcoord/core/pool.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/signaling/double_barrier.hpp>
#include <redcoord/signaling/signal_hub.hpp>
#include <redcoord/testing/runtime_server.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

using namespace std::chrono_literals;
using namespace redcoord;

TEST(SignalingClock, ADoubleBarriersHeartbeatRunsOncePerPeriodOfTheClock) {
    redcoord::testing::runtime_server s;
    auto& [srv, rt, pool] = s;
    signal_hub hub(pool);
    barrier_options o;
    o.arrival_lease = 60s;  // a heartbeat every 20 s
    double_barrier db(hub, "clock-db", 1, o);
    db.enter(5000ms);
    ASSERT_TRUE(db.inside());
    // Each heartbeat is one script call on the server.
    const auto ticks = [&] { return srv.command_calls("evalsha") + srv.command_calls("eval"); };
    const auto t0 = ticks();
    rt->clock().advance(10s);
    std::this_thread::sleep_for(200ms);
    EXPECT_EQ(ticks(), t0) << "a heartbeat before its period";
    rt->clock().advance(10s + 1ms);
    ASSERT_TRUE(redcoord::testing::eventually([&] { return ticks() > t0; }, 5s));
    std::this_thread::sleep_for(300ms);
    EXPECT_LE(ticks() - t0, 2) << "heartbeats kept running after the one that was due";
    db.leave(5000ms);
}
