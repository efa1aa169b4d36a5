// The queue metrics and log records move when the queue acts (issue 20): ready, in-flight and
// dead gauges sampled at each scrape, redeliveries and dead letters counted, and a record
// when a dead consumer's messages are recovered.

#include "../metrics_support.hpp"
#include "queue_test_util.hpp"

#include <redcoord/queue/reliable_queue.hpp>
#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

#include <memory>

using namespace std::chrono_literals;
using redcoord::testing::local_server;

namespace {

std::string series(const std::string& metric, const std::string& queue) {
    return metric + "{name=\"" + queue + "\"}";
}

TEST(QueueMetrics, GaugesAndCountersFollowPushPopAckNackAndRecovery) {
    local_server server;
    metrics_test::observed_runtime o;
    redcoord::connection_pool pool(server.endpoint(), {}, o.rt);
    redcoord::reliable_queue a(pool, "m-jobs", queue_test::quiet("a")),
        b(pool, "m-jobs", queue_test::quiet("b"));
    const auto ready = series("redcoord_queue_ready", "m-jobs"),
               in_flight = series("redcoord_queue_in_flight", "m-jobs"),
               dead = series("redcoord_queue_dead", "m-jobs"),
               redeliveries = series("redcoord_queue_redeliveries_total", "m-jobs"),
               dead_letters = series("redcoord_queue_dead_letters_total", "m-jobs");
    for (auto p : {"j1", "j2", "j3"}) a.push(p);
    EXPECT_EQ(o.value(ready), 3);
    EXPECT_EQ(o.value(in_flight), 0);

    auto d1 = a.pop(1s);
    ASSERT_TRUE(d1);
    EXPECT_EQ(o.value(ready), 2);
    EXPECT_EQ(o.value(in_flight), 1);
    EXPECT_TRUE(a.ack(*d1));
    EXPECT_EQ(o.value(in_flight), 0);

    auto d2 = a.pop(1s);
    ASSERT_TRUE(d2);
    EXPECT_TRUE(a.nack(*d2));  // requeued
    EXPECT_EQ(o.value(redeliveries), 1);
    auto d3 = a.pop(1s);
    ASSERT_TRUE(d3);
    EXPECT_TRUE(a.nack(*d3, redcoord::nack_action::dead_letter));
    EXPECT_EQ(o.value(dead_letters), 1);
    EXPECT_EQ(o.value(dead), 1);

    // `a` dies holding the last message: `b` recovers it.
    auto d4 = a.pop(1s);
    ASSERT_TRUE(d4);
    EXPECT_EQ(b.try_pop(), std::nullopt);  // registers b (the queue is empty now)
    EXPECT_EQ(o.value(in_flight), 1);
    ASSERT_EQ(server.command({"DEL", a.key() + ":heartbeat:" + a.consumer_id()}).integer(), 1);
    const auto rr = b.recover();
    EXPECT_EQ(rr.requeued, 1u);
    EXPECT_EQ(o.value(redeliveries), 2);
    EXPECT_EQ(o.value(ready), 1);
    EXPECT_EQ(o.value(in_flight), 0);
    const auto records = o.sink->with_message("recovered the messages of dead consumers");
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(records[0].component, "queue");
    EXPECT_EQ(records[0].fields.at("queue"), "m-jobs");
    EXPECT_EQ(records[0].fields.at("requeued"), "1");
    EXPECT_EQ(records[0].fields.at("consumers"), "1");
}

TEST(QueueMetrics, AScrapeWithTheServerDownKeepsTheLastValues) {
    local_server server;
    metrics_test::observed_runtime o;
    redcoord::endpoint ep = server.endpoint();
    ep.connect_timeout = 200ms;
    ep.command_timeout = 200ms;
    redcoord::connection_pool pool(ep, {}, o.rt);
    redcoord::reliable_queue q(pool, "m-down", queue_test::quiet("q"));
    q.push("x");
    EXPECT_EQ(o.value(series("redcoord_queue_ready", "m-down")), 1);
    server.kill();
    EXPECT_EQ(o.value(series("redcoord_queue_ready", "m-down")), 1);  // no throw, last value kept
}

TEST(QueueMetrics, GaugesOfAGoneQueueReadZeroUnlessAnotherObjectSamplesThem) {
    local_server server;
    metrics_test::observed_runtime o;
    redcoord::connection_pool pool(server.endpoint(), {}, o.rt);
    const auto ready = series("redcoord_queue_ready", "m-gone");
    auto survivor =
        std::make_unique<redcoord::reliable_queue>(pool, "m-gone", queue_test::quiet("s"));
    {
        redcoord::reliable_queue q(pool, "m-gone", queue_test::quiet("q"));
        q.push("x");
        EXPECT_EQ(o.value(ready), 1);
    }
    EXPECT_EQ(o.value(ready), 1);  // sampled again by the survivor
    survivor.reset();
    EXPECT_EQ(o.value(ready), 0);
}

}  // namespace
