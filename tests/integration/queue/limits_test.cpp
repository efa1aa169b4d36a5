// "Forever" waits, payload limits and keyspace hygiene (review 2026-11-23: C8, Q9, issue).

#include "queue_test_util.hpp"

#include <redcoord/core/errors.hpp>
#include <redcoord/queue/list_queue.hpp>
#include <redcoord/queue/queue_worker.hpp>
#include <redcoord/queue/reliable_queue.hpp>
#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

#include <set>
#include <thread>

using namespace redcoord;
using namespace std::chrono_literals;
using redcoord::testing::local_server;
using queue_test::eventually;
using std::chrono::milliseconds;

namespace {

// Runs `pop` on this thread while another pushes after 300 ms; returns what pop returned
// and checks it waited.
template <class Pop, class Push>
auto pop_while_pushing_late(Pop pop, Push push) {
    std::thread producer([&] {
        std::this_thread::sleep_for(300ms);
        push();
    });
    const auto t0 = std::chrono::steady_clock::now();
    decltype(pop()) got;
    try {
        got = pop();
    } catch (...) {
        producer.join();
        throw;
    }
    const auto waited = std::chrono::steady_clock::now() - t0;
    producer.join();
    EXPECT_GE(waited, 250ms);
    return got;
}

}  // namespace

// The reply deadline (command_timeout) is shorter than the wait, so a "forever" pop must
// neither return at once nor outwait its own socket deadline.
static redcoord::endpoint short_deadline(const local_server& srv) {
    auto ep = srv.endpoint();
    ep.command_timeout = 200ms;
    return ep;
}

TEST(ReliableQueue, C8_PopForeverBlocksUntilAPush) {
    local_server srv;
    connection_pool pool(short_deadline(srv));
    reliable_queue q(pool, "c8", {.consumer_id = "c"});
    std::optional<delivery> d;
    EXPECT_NO_THROW(d = pop_while_pushing_late([&] { return q.pop(milliseconds::max()); },
                                               [&] { reliable_queue(pool, "c8").push("late"); }));
    ASSERT_TRUE(d);
    EXPECT_EQ(d->payload, "late");
    EXPECT_TRUE(q.ack(*d));
}

TEST(ListQueue, C8_PopForeverBlocksUntilAPush) {
    local_server srv;
    connection_pool pool(short_deadline(srv));
    list_queue q(pool, "c8");
    std::optional<std::string> got;
    EXPECT_NO_THROW(got = pop_while_pushing_late([&] { return q.pop(milliseconds::max()); },
                                                 [&] { list_queue(pool, "c8").push("late"); }));
    EXPECT_EQ(got, "late");
}

TEST(QueueWorker, C8_ForeverPollDoesNotSpinAndStopsPromptly) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    reliable_queue q(pool, "c8w");
    std::atomic<int> handled{0};
    queue_worker w(q,
                   [&](const delivery&) {
                       ++handled;
                       return handler_result::ack;
                   },
                   {.threads = 2, .poll_timeout = milliseconds::max()});
    w.start();
    std::this_thread::sleep_for(100ms);
    const auto before = srv.command_calls("lmove") + srv.command_calls("blmove");
    std::this_thread::sleep_for(500ms);
    const auto moves = srv.command_calls("lmove") + srv.command_calls("blmove") - before;
    EXPECT_LT(moves, 20) << "an idle worker polls in a loop";
    q.push("job");
    EXPECT_TRUE(eventually([&] { return handled.load() == 1; }, 5s));
    const auto t0 = std::chrono::steady_clock::now();
    w.stop();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
    EXPECT_EQ(w.stats().acked, 1u);
}

TEST(ListQueue, Q9_OversizedPayloadIsRefusedBeforeAnythingIsSent) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    list_queue q(pool, "q9", {.max_payload = 1024});
    EXPECT_THROW(q.push(std::string(1025, 'x')), payload_too_large);
    EXPECT_THROW(q.push_batch(std::vector<std::string>{"ok", std::string(1025, 'x')}),
                 payload_too_large);
    EXPECT_THROW(list_queue(pool, "q9", {.max_payload = 0}), invalid_argument);
    EXPECT_EQ(srv.command_calls("lpush"), 0);
    q.push(std::string(1024, 'x'));
    EXPECT_EQ(q.size(), 1u);
}

TEST(ReliableQueue, Q9_OversizedPayloadIsRefusedBeforeAnythingIsSent) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    reliable_queue q(pool, "q9", {.max_payload = 1024});
    EXPECT_THROW(q.push(std::string(1025, 'x')), payload_too_large);
    EXPECT_THROW(q.push_batch(std::vector<std::string>{"ok", std::string(1025, 'x')}),
                 payload_too_large);
    EXPECT_THROW(reliable_queue(pool, "q9", {.max_payload = 0}), invalid_argument);
    EXPECT_THROW(reliable_queue(pool, "q9", {.max_payload = max_payload_limit + 1}),
                 invalid_argument);
    EXPECT_EQ(srv.command_calls("lpush"), 0);
    q.push(std::string(1024, 'x'));
    EXPECT_EQ(q.size(), 1u);
}

TEST(ListQueue, Q9_ServerRefusingAHugeArgumentLeavesNoDesynchronisedConnection) {
    // The server's own bulk limit is lower than ours: it answers a protocol error and closes
    // the link. The next command on the pool must not inherit that link.
    local_server srv({.config = {{"proto-max-bulk-len", "1mb"}}});
    connection_pool pool(srv.endpoint(), {.max_size = 1});
    list_queue lq(pool, "q9srv");
    reliable_queue rq(pool, "q9srv");
    EXPECT_THROW(lq.push(std::string(2 * 1024 * 1024, 'x')), error);
    EXPECT_NO_THROW(lq.push("next"));
    EXPECT_THROW(rq.push(std::string(2 * 1024 * 1024, 'x')), error);
    EXPECT_NO_THROW(rq.push("after"));
    EXPECT_EQ(lq.size(), 2u);
}

TEST(ReliableQueue, KeyspaceHygiene_ThousandClosedConsumersLeaveNoPersistentKeys) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    reliable_queue producer(pool, "hyg");
    constexpr int n = 1000;
    std::vector<std::string> jobs;
    for (int i = 0; i < n; ++i) jobs.push_back("j" + std::to_string(i));
    producer.push_batch(jobs);
    for (int i = 0; i < n; ++i) {
        reliable_queue c(
            pool, "hyg",
            {.consumer_id = "consumer-" + std::to_string(i), .recover_on_start = i % 100 == 0});
        auto d = c.pop(1s);
        ASSERT_TRUE(d);
        switch (i % 4) {
            case 0: EXPECT_TRUE(c.ack(*d)); break;
            case 1: EXPECT_TRUE(c.nack(*d)); break;
            case 2: EXPECT_TRUE(c.nack(*d, nack_action::dead_letter)); break;
            default: break;  // left unacked: close() hands it back
        }
    }  // each destructor closes its consumer
    const auto left = srv.keys_without_ttl();
    const std::set<std::string> persistent(left.begin(), left.end());
    const std::set<std::string> documented{producer.key(), producer.dead_key()};
    EXPECT_EQ(persistent, documented);
    EXPECT_EQ(srv.command({"SCARD", producer.key() + ":consumers"}).integer(), 0);
    EXPECT_EQ(srv.command({"DBSIZE"}).integer(), 2);
}
