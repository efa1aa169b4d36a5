// Acks and nacks that the server refuses or never answers (review 2026-11-23: Q1, Q8, D1).

#include "busy_server.hpp"

#include "queue_test_util.hpp"

#include <redcoord/core/errors.hpp>
#include <redcoord/queue/queue_worker.hpp>
#include <redcoord/queue/reliable_queue.hpp>
#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

#include <future>
#include <thread>

using namespace redcoord;
using namespace std::chrono_literals;
using redcoord::testing::busy_config;
using redcoord::testing::busy_server;
using redcoord::testing::local_server;
using queue_test::eventually;
using queue_test::quiet;

namespace {

long long list_length(local_server& srv, const std::string& key) {
    return srv.command({"LLEN", key}).integer();
}

}  // namespace

TEST(ReliableQueue, Q1_AckRefusedWithBusyIsRetried) {
    local_server srv(busy_config());
    connection_pool pool(srv.endpoint());
    reliable_queue q(pool, "q1ack", quiet("c"));
    q.push("m");
    auto d = q.pop(1s);
    ASSERT_TRUE(d);
    busy_server busy(srv);
    busy.start(400ms);
    // The server answers -BUSY for 400 ms; the ack is retried while the lease is valid.
    bool acked = false;
    EXPECT_NO_THROW(acked = q.ack(*d));
    EXPECT_TRUE(acked);
    busy.stop();
    EXPECT_EQ(q.consumer_id(), "c");  // a refusal is no lost reply: the identity stays
    EXPECT_EQ(list_length(srv, q.processing_key()), 0);
    EXPECT_EQ(list_length(srv, q.key()), 0);
    EXPECT_GE(q.settle_retries(), 1u);
}

TEST(QueueWorker, Q1_NackRefusedWithBusyIsRetried) {
    local_server srv(busy_config());
    connection_pool pool(srv.endpoint());
    reliable_queue q(pool, "q1nack");
    busy_server busy(srv);
    std::atomic<int> calls{0};
    queue_worker w(q,
                   [&](const delivery& d) {
                       if (++calls == 1) {
                           busy.start(400ms);  // the nack below meets -BUSY
                           return handler_result::requeue;
                       }
                       EXPECT_EQ(d.attempts, 1u);
                       return handler_result::ack;
                   },
                   {.threads = 1, .poll_timeout = 100ms});
    q.push("m");
    w.start();
    EXPECT_TRUE(eventually([&] { return w.stats().acked == 1; }, 8s));
    w.stop();
    busy.stop();
    auto st = w.stats();
    EXPECT_EQ(st.requeued, 1u);
    EXPECT_EQ(st.acked, 1u);
    EXPECT_EQ(st.unsettled, 0u);
    for (auto& [c, n] : q.stats().in_flight) EXPECT_EQ(n, 0u) << c;
}

TEST(ReliableQueue, Q1_AckRefusedPastTheLeaseIsGivenUpAndRecovered) {
    // NOREPLICAS: every write is refused, heartbeats included, so the lease cannot be kept.
    local_server srv;
    connection_pool pool(srv.endpoint());
    reliable_queue q(pool, "q1norep",
                     {.consumer_id = "c",
                      .visibility_timeout = 1000ms,
                      .heartbeat_interval = 200ms,
                      .recover_interval = 100ms});
    q.push("m");
    auto d = q.pop(1s);
    ASSERT_TRUE(d);
    const auto stranded_in = q.processing_key();
    srv.command({"CONFIG", "SET", "min-replicas-to-write", "1"});
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_THROW((void)q.ack(*d), reply_error);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
    EXPECT_NE(q.consumer_id(), "c");  // given up: the identity is retired, so its list is recovered
    srv.command({"CONFIG", "SET", "min-replicas-to-write", "0"});
    std::optional<delivery> again;
    for (int i = 0; i < 60 && !again; ++i) again = q.pop(100ms);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->id, d->id);
    EXPECT_EQ(again->attempts, 1u);
    EXPECT_TRUE(q.ack(*again));
    EXPECT_EQ(srv.command({"EXISTS", stranded_in}).integer(), 0);
}

TEST(ReliableQueue, Q8_AckWithThePoolExhaustedIsRetried) {
    local_server srv;
    connection_pool pool(srv.endpoint(), {.max_size = 1, .borrow_timeout = 50ms});
    reliable_queue q(pool, "q8", quiet("c"));
    q.push("m");
    auto d = q.pop(1s);
    ASSERT_TRUE(d);
    std::promise<void> holding;
    std::thread holder([&] {
        auto c = pool.borrow();
        holding.set_value();
        std::this_thread::sleep_for(300ms);
    });
    holding.get_future().wait();
    // Nothing was sent while the pool was exhausted: retried, not taken for a lost reply.
    bool acked = false;
    EXPECT_NO_THROW(acked = q.ack(*d));
    holder.join();
    EXPECT_TRUE(acked);
    EXPECT_EQ(q.consumer_id(), "c");
    EXPECT_EQ(list_length(srv, q.processing_key()), 0);
}

TEST(ReliableQueue, D1_LostAckOrNackReplyIsOutcomeUnknown) {
    local_server srv;
    auto ep = srv.endpoint();
    ep.command_timeout = 300ms;
    connection_pool pool(ep);
    reliable_queue q(pool, "d1", quiet("c"));
    q.push_batch(std::vector<std::string>{"a", "b"});
    auto a = q.pop(1s);
    auto b = q.pop(1s);
    ASSERT_TRUE(a && b);
    // Each write goes out on an established pooled connection, then its reply is lost.
    srv.pause();
    EXPECT_THROW((void)q.ack(*a), outcome_unknown);
    srv.resume();
    EXPECT_EQ(q.size(), 0u);  // a fresh pooled connection for the nack
    srv.pause();
    EXPECT_THROW((void)q.nack(*b), outcome_unknown);
    srv.resume();
}
