// Issue 35, item 6: a reliable_queue consumer's heartbeats and periodic recovery come due by
// its runtime's clock, so a test advances the clock instead of sleeping through intervals of
// tens of seconds (without the clock seam the waits below would fail).

#include <redcoord/core/pool.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/queue/reliable_queue.hpp>
#include <redcoord/testing/runtime_server.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

using namespace std::chrono_literals;
using namespace redcoord;

using redcoord::testing::runtime_server;

namespace {

reliable_queue_options slow_upkeep(std::string id) {
    return {.consumer_id = std::move(id),
            .visibility_timeout = 60s,
            .heartbeat_interval = 20s,
            .recover_interval = 30s,
            .recover_on_start = false};
}

}  // namespace

TEST(QueueClock, AConsumerRenewsItsLeaseWhenTheHeartbeatIsDueByTheClock) {
    runtime_server s;
    auto& [srv, rt, pool] = s;
    reliable_queue q(pool, "clock-hb", slow_upkeep("c1"));
    q.push("job");
    auto d = q.pop(1s);
    ASSERT_TRUE(d);
    const auto hb = q.key() + ":heartbeat:c1";
    ASSERT_EQ(srv.command({"PEXPIRE", hb, "30000"}).integer(), 1);
    rt->clock().advance(5s);
    std::this_thread::sleep_for(200ms);
    EXPECT_LE(srv.command({"PTTL", hb}).integer(), 30000);
    // The heartbeat interval by the clock: the lease is renewed to the visibility timeout.
    rt->clock().advance(20s);
    ASSERT_TRUE(redcoord::testing::eventually(
        [&] {
            return srv.command({"PTTL", hb}).integer() > 50000;
        },
        5s))
        << "PTTL " << srv.command({"PTTL", hb}).integer();
    EXPECT_TRUE(q.ack(*d));
}

TEST(QueueClock, PeriodicRecoveryReturnsADeadConsumersMessageWhenDueByTheClock) {
    runtime_server s;
    auto& [srv, rt, pool] = s;
    reliable_queue live(pool, "clock-recover", slow_upkeep("live"));
    EXPECT_EQ(live.try_pop(), std::nullopt);  // starts live's upkeep
    // A consumer on another runtime takes a message and stops heartbeating without closing
    // (its process died): its lease is gone.
    auto other_rt = runtime::create();
    connection_pool other_pool(srv.endpoint(), {}, other_rt);
    reliable_queue dead(other_pool, "clock-recover", slow_upkeep("dead"));
    dead.push("orphan");
    const auto taken = dead.pop(1s);
    ASSERT_TRUE(taken);
    ASSERT_EQ(srv.command({"DEL", live.key() + ":heartbeat:dead"}).integer(), 1);
    EXPECT_EQ(live.stats().ready, 0u);
    // The recovery interval by live's clock: the message is back without a recover() call.
    rt->clock().advance(30s + 1ms);
    ASSERT_TRUE(redcoord::testing::eventually([&] { return live.stats().ready == 1; }, 5s));
    auto d = live.pop(1s);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->id, taken->id);
    EXPECT_TRUE(live.ack(*d));
}
