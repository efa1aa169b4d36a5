#include <redcoord/core/errors.hpp>
#include <redcoord/core/holder_label.hpp>
#include <redcoord/queue/list_queue.hpp>
#include <redcoord/queue/queue_worker.hpp>
#include <redcoord/queue/reliable_queue.hpp>

#include <gtest/gtest.h>

using namespace redcoord;
using namespace std::chrono_literals;

// Constructors validate without touching the network (the pool connects lazily, and no
// server listens on this endpoint).
namespace {
endpoint nowhere() {
    endpoint e;
    e.port = 1;
    return e;
}
}  // namespace

TEST(QueueOptions, NamesAreValidated) {
    connection_pool pool(nowhere());
    EXPECT_THROW(list_queue(pool, ""), invalid_argument);
    EXPECT_THROW(list_queue(pool, "a\r\nb"), invalid_argument);
    EXPECT_THROW(reliable_queue(pool, ""), invalid_argument);
    EXPECT_THROW(reliable_queue(pool, std::string("a\0b", 3)), invalid_argument);
    EXPECT_THROW(reliable_queue(pool, std::string(max_name_length + 1, 'q')), invalid_argument);
    EXPECT_THROW(reliable_queue(pool, "jobs", {.consumer_id = "bad\nid"}), invalid_argument);
    EXPECT_NO_THROW(reliable_queue(pool, "jobs", {.consumer_id = "worker-1"}));
}

TEST(QueueOptions, KeysFollowTheNamingScheme) {
    connection_pool pool(nowhere());
    list_queue lq(pool, "jobs");
    EXPECT_EQ(lq.key(), "redcoord:queue:{jobs}");
    reliable_queue rq(pool, "jobs", {.consumer_id = "c1", .prefix = "app:"});
    EXPECT_EQ(rq.key(), "app:queue:{jobs}");
    EXPECT_EQ(rq.dead_key(), "app:queue:{jobs}:dead");
    EXPECT_EQ(rq.processing_key(), "app:queue:{jobs}:processing:c1");
    EXPECT_EQ(rq.consumer_id(), "c1");
}

TEST(QueueOptions, RandomConsumerIdsDifferAndCarryTheHolderLabel) {
    connection_pool pool(nowhere());
    reliable_queue a(pool, "jobs"), b(pool, "jobs");
    EXPECT_EQ(a.consumer_id().size(), 41u + default_holder_label().size());
    EXPECT_EQ(holder_label_of(a.consumer_id()), default_holder_label());
    EXPECT_NE(a.consumer_id(), b.consumer_id());
}

TEST(QueueOptions, TimingAndAttemptsAreValidated) {
    connection_pool pool(nowhere());
    EXPECT_THROW(
        reliable_queue(pool, "q", {.visibility_timeout = 50ms, .heartbeat_interval = 10ms}),
        invalid_argument);
    EXPECT_THROW(
        reliable_queue(pool, "q", {.visibility_timeout = 1000ms, .heartbeat_interval = 0ms}),
        invalid_argument);
    EXPECT_THROW(
        reliable_queue(pool, "q", {.visibility_timeout = 1000ms, .heartbeat_interval = 600ms}),
        invalid_argument);
    EXPECT_THROW(reliable_queue(pool, "q", {.recover_interval = -1ms}), invalid_argument);
    EXPECT_THROW(reliable_queue(pool, "q", {.max_attempts = 0}), invalid_argument);
    EXPECT_NO_THROW(reliable_queue(pool, "q",
                                   {.visibility_timeout = 1000ms,
                                    .heartbeat_interval = 500ms,
                                    .recover_interval = 0ms,
                                    .max_attempts = 1}));
}

TEST(QueueOptions, WorkerOptionsAreValidated) {
    connection_pool pool(nowhere());
    reliable_queue q(pool, "q");
    auto h = [](const delivery&) { return handler_result::ack; };
    EXPECT_THROW(queue_worker(q, nullptr), invalid_argument);
    EXPECT_THROW(queue_worker(q, h, {.threads = 0}), invalid_argument);
    EXPECT_THROW(queue_worker(q, h, {.poll_timeout = 0ms}), invalid_argument);
    EXPECT_NO_THROW(queue_worker(q, h, {.threads = 2}));
}

TEST(QueueOptions, ClosingAnUnstartedQueueDoesNothing) {
    connection_pool pool(nowhere());
    reliable_queue q(pool, "q");
    EXPECT_NO_THROW(q.close());
}
