// inspect_queue() against a live reliable queue: counts per list and consumer, ages, leases.

#include <redcoord/core/errors.hpp>
#include <redcoord/queue/inspect.hpp>
#include <redcoord/queue/reliable_queue.hpp>
#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

#include <thread>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::local_server;

namespace {
reliable_queue_options consumer(std::string id) {
    reliable_queue_options o;
    o.consumer_id = std::move(id);
    o.visibility_timeout = 10s;
    return o;
}
}  // namespace

TEST(InspectQueue, EmptyQueue) {
    local_server s;
    connection_pool pool(s.endpoint());
    const auto v = inspect_queue(pool, "none");
    EXPECT_EQ(v.ready, 0u);
    EXPECT_EQ(v.dead, 0u);
    EXPECT_EQ(v.in_flight(), 0u);
    EXPECT_FALSE(v.oldest_ready_age);
    EXPECT_TRUE(v.consumers.empty());
}

TEST(InspectQueue, ReadyInFlightPerConsumerDeadAndAges) {
    local_server s;
    connection_pool pool(s.endpoint());
    reliable_queue producer(pool, "work", consumer("producer"));
    for (int i = 0; i < 5; ++i) producer.push("job-" + std::to_string(i));
    std::this_thread::sleep_for(120ms);  // so the oldest message has an age to show

    reliable_queue a(pool, "work", consumer("a"));
    reliable_queue b(pool, "work", consumer("b"));
    auto d1 = a.pop(1s);
    auto d2 = a.pop(1s);
    auto d3 = b.pop(1s);
    ASSERT_TRUE(d1 && d2 && d3);
    ASSERT_TRUE(b.nack(*d3, nack_action::dead_letter));

    const auto v = inspect_queue(pool, "work");
    EXPECT_EQ(v.ready, 2u);
    EXPECT_EQ(v.dead, 1u);
    EXPECT_EQ(v.in_flight(), 2u);
    EXPECT_EQ(v.expired(), 0u);
    ASSERT_TRUE(v.oldest_ready_age);
    EXPECT_GE(*v.oldest_ready_age, 100ms);
    EXPECT_LT(*v.oldest_ready_age, 60s);
    // a and b registered by popping; the producer only pushed, so it is not a consumer.
    ASSERT_EQ(v.consumers.size(), 2u);
    EXPECT_EQ(v.consumers[0].id, a.consumer_id());
    EXPECT_EQ(v.consumers[0].in_flight, 2u);
    ASSERT_TRUE(v.consumers[0].lease_left);
    EXPECT_GT(*v.consumers[0].lease_left, 5s);
    ASSERT_TRUE(v.consumers[0].oldest_in_flight_age);
    EXPECT_GE(*v.consumers[0].oldest_in_flight_age, 100ms);
    EXPECT_EQ(v.consumers[1].id, b.consumer_id());
    EXPECT_EQ(v.consumers[1].in_flight, 0u);
    EXPECT_FALSE(v.consumers[1].oldest_in_flight_age);

    ASSERT_TRUE(a.ack(*d1));
    EXPECT_EQ(inspect_queue(pool, "work").in_flight(), 1u);
}

TEST(InspectQueue, RawElementsHaveNoAge) {
    local_server s;
    connection_pool pool(s.endpoint());
    s.command({"LPUSH", "redcoord:queue:{raw}", "pushed by redis-cli"});
    const auto v = inspect_queue(pool, "raw");
    EXPECT_EQ(v.ready, 1u);
    EXPECT_FALSE(v.oldest_ready_age);
}

TEST(InspectQueue, BadName) {
    local_server s;
    connection_pool pool(s.endpoint());
    EXPECT_THROW((void)inspect_queue(pool, std::string(2000, 'x')), invalid_argument);
}
