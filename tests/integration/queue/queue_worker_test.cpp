#include "queue_test_util.hpp"

#include <redcoord/queue/queue_worker.hpp>
#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <thread>

using namespace redcoord;
using namespace std::chrono_literals;
using redcoord::testing::local_server;
using queue_test::eventually;

namespace {}  // namespace

TEST(QueueWorker, ProcessesEveryMessageWithRetries) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    reliable_queue q(pool, "work", {.max_attempts = 3});
    std::vector<std::string> jobs;
    for (int i = 0; i < 300; ++i) jobs.push_back("job" + std::to_string(i));
    q.push_batch(jobs);
    std::mutex mu;
    std::map<std::string, int> calls;
    queue_worker w(q,
                   [&](const delivery& d) {
                       int n;
                       {
                           std::lock_guard lk(mu);
                           n = ++calls[d.payload];
                       }
                       // Every 10th job fails once by returning requeue, every 15th throws once.
                       auto i = std::stoi(d.payload.substr(3));
                       if (n == 1 && i % 10 == 0) return handler_result::requeue;
                       if (n == 1 && i % 15 == 0) throw std::runtime_error("flaky");
                       if (i == 7) return handler_result::dead_letter;
                       return handler_result::ack;
                   },
                   {.threads = 3});
    w.start();
    ASSERT_TRUE(eventually([&] { return w.stats().acked + w.stats().dead_lettered == 300; }));
    w.stop();
    auto st = w.stats();
    EXPECT_EQ(st.dead_lettered, 1u);
    EXPECT_EQ(st.requeued, 30u + 20u - 10u);  // multiples of 10 or 15 (30 is both)
    EXPECT_EQ(st.lost_leases, 0u);
    EXPECT_EQ(calls.size(), 300u);
    auto qs = q.stats();
    EXPECT_EQ(qs.ready, 0u);
    EXPECT_EQ(qs.dead, 1u);
    EXPECT_EQ(q.dead_letters().at(0).payload, "job7");
}

TEST(QueueWorker, StopDrainsInFlightHandlers) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    reliable_queue q(pool, "drain");
    q.push_batch(std::vector<std::string>{"a", "b", "c", "d"});
    std::atomic<int> started{0}, finished{0};
    queue_worker w(q,
                   [&](const delivery&) {
                       ++started;
                       std::this_thread::sleep_for(300ms);
                       ++finished;
                       return handler_result::ack;
                   },
                   {.threads = 2});
    w.start();
    ASSERT_TRUE(eventually([&] { return started.load() >= 2; }));
    w.stop();
    // The handlers that were running finished and were acked; nothing else was taken.
    EXPECT_EQ(started.load(), finished.load());
    EXPECT_EQ(w.stats().acked, static_cast<std::uint64_t>(finished.load()));
    auto st = q.stats();
    EXPECT_EQ(st.ready + w.stats().acked, 4u);
    for (auto& [c, n] : st.in_flight) EXPECT_EQ(n, 0u) << c;
    EXPECT_FALSE(w.running());
}

TEST(QueueWorker, StopIsPromptWhenIdle) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    reliable_queue q(pool, "idle");
    queue_worker w(q, [](const delivery&) { return handler_result::ack; },
                   {.threads = 4, .poll_timeout = 100ms});
    w.start();
    std::this_thread::sleep_for(150ms);
    auto t0 = std::chrono::steady_clock::now();
    w.stop();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
}

TEST(QueueWorker, StopDoesNotWaitOutTheRetryDelayAfterAFailedPop) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    reliable_queue q(pool, "down");
    queue_worker w(q, [](const delivery&) { return handler_result::ack; },
                   {.threads = 2, .poll_timeout = 100ms, .retry_delay = std::chrono::hours(1)});
    srv.kill();
    w.start();
    // Both threads' pops failed: each is now in its hour-long pause before the next attempt.
    ASSERT_TRUE(eventually([&] { return w.stats().errors >= 2; }));
    auto t0 = std::chrono::steady_clock::now();
    w.stop();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
}

TEST(QueueWorker, SurvivesAServerRestart) {
    local_server srv(
        redcoord::testing::server_options{.appendonly = true, .appendfsync = "always"});
    connection_pool pool(srv.endpoint());
    reliable_queue q(pool, "restart");
    std::atomic<int> handled{0};
    queue_worker w(q,
                   [&](const delivery&) {
                       ++handled;
                       return handler_result::ack;
                   },
                   {.threads = 2, .poll_timeout = 100ms, .retry_delay = 20ms});
    w.start();
    q.push("before");
    ASSERT_TRUE(eventually([&] { return handled.load() == 1; }));
    srv.kill();
    std::this_thread::sleep_for(200ms);
    srv.restart();
    q.push("after");
    EXPECT_TRUE(eventually([&] { return handled.load() >= 2; }));
    w.stop();
    EXPECT_GE(w.stats().errors, 1u);
}
