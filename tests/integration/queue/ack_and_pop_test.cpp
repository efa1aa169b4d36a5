// reliable_queue::ack_and_pop(): an ack and the next pop in one round trip (issue 37, item 7), and
// queue_worker's loop on it.

#include "busy_server.hpp"

#include "queue_test_util.hpp"

#include <redcoord/core/errors.hpp>
#include <redcoord/queue/queue_worker.hpp>
#include <redcoord/queue/reliable_queue.hpp>
#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace redcoord;
using namespace std::chrono_literals;
using queue_test::eventually;
using queue_test::quiet;
using queue_test::short_lease;
using redcoord::testing::local_server;

namespace ack_and_pop_test {

long long scripts_run(const local_server& srv) {
    return srv.command_calls("evalsha") + srv.command_calls("eval");
}

// Pushes "a" and "b", and pops "a".
delivery first_of_two(reliable_queue& q) {
    q.push("a");
    q.push("b");
    auto a = q.pop(1s);
    if (!a || a->payload != "a") throw std::runtime_error("first_of_two: 'a' was not popped");
    return *a;
}

}  // namespace ack_and_pop_test

using ack_and_pop_test::first_of_two;
using ack_and_pop_test::scripts_run;

TEST(AckAndPop, AcksAndTakesTheNextWithPlainCommands) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    reliable_queue q(pool, "ap", quiet("c"));
    const auto a = first_of_two(q);
    const auto scripts = scripts_run(srv), lrems = srv.command_calls("lrem"),
               moves = srv.command_calls("lmove") + srv.command_calls("blmove");
    auto r = q.ack_and_pop(a);
    EXPECT_TRUE(r.acked);
    ASSERT_TRUE(r.next);
    EXPECT_EQ(r.next->payload, "b");
    EXPECT_EQ(r.next->consumer, "c");
    // Exactly one LREM and one LMOVE reached the server, and no script.
    EXPECT_EQ(scripts_run(srv) - scripts, 0);
    EXPECT_EQ(srv.command_calls("lrem") - lrems, 1);
    EXPECT_EQ(srv.command_calls("lmove") + srv.command_calls("blmove") - moves, 1);
    const auto in_flight = srv.command({"LRANGE", q.processing_key(), "0", "-1"}).elements();
    ASSERT_EQ(in_flight.size(), 1u);
    EXPECT_EQ(in_flight[0].text(), r.next->element);
    // The last message: acked, and an empty queue gives nothing.
    auto last = q.ack_and_pop(*r.next);
    EXPECT_TRUE(last.acked);
    EXPECT_FALSE(last.next);
    EXPECT_EQ(q.stats().in_flight.at("c"), 0u);
    EXPECT_EQ(srv.command({"LLEN", q.key()}).integer(), 0);
}

TEST(AckAndPop, AnAckOfAMessageNoLongerHeldStillTakesTheNext) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    reliable_queue q(pool, "ap-stale", quiet("c"));
    const auto a = first_of_two(q);
    ASSERT_TRUE(q.ack(a));
    auto r = q.ack_and_pop(a);  // acked already: false, as ack() answers
    EXPECT_FALSE(r.acked);
    ASSERT_TRUE(r.next);
    EXPECT_EQ(r.next->payload, "b");
    EXPECT_TRUE(q.ack(*r.next));
    EXPECT_EQ(q.stats().in_flight.at("c"), 0u);
}

TEST(AckAndPop, AnUntrustedLeaseIsRenewedInTheSameWrite) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    reliable_queue q(pool, "ap-renew",
                     {.consumer_id = "c",
                      .visibility_timeout = 4000ms,
                      .heartbeat_interval = 1000ms,
                      .recover_interval = 0ms,
                      .recover_on_start = false});
    const auto a = first_of_two(q);
    // The server loses the heartbeat long before its TTL; the next renewal notices, and from
    // then on every move goes with a renewal.
    ASSERT_EQ(srv.command({"DEL", q.key() + ":heartbeat:c"}).integer(), 1);
    ASSERT_TRUE(eventually([&] { return q.lease_losses() >= 1; }, 3s));
    // Right after that renewal, the next one is a second away.
    const auto sadds = srv.command_calls("sadd");
    auto r = q.ack_and_pop(a);
    EXPECT_TRUE(r.acked);
    ASSERT_TRUE(r.next);
    // The renewal went in the same write (MULTI, SADD, SET, EXEC before the LMOVE).
    EXPECT_EQ(srv.command_calls("sadd") - sadds, 1);
    EXPECT_GT(srv.command({"PTTL", q.key() + ":heartbeat:c"}).integer(), 3000);
    EXPECT_TRUE(q.ack(*r.next));
}

TEST(AckAndPop, ALostReplyRetiresTheIdentityAndLosesNothing) {
    local_server srv;
    auto ep = srv.endpoint();
    ep.command_timeout = 300ms;
    connection_pool pool(ep);
    reliable_queue q(pool, "ap-lost", short_lease("c"));
    const auto a = first_of_two(q);
    srv.pause();
    EXPECT_THROW((void)q.ack_and_pop(a), outcome_unknown);
    srv.resume();
    EXPECT_EQ(q.consumer_id().rfind("c~", 0), 0u);
    // The late commands ran once the server woke: "a" is acked, and "b" sits in the retired
    // identity's list until its lease lapses and recovery returns it.
    std::optional<delivery> b;
    for (int i = 0; i < 50 && !b; ++i) b = q.pop(100ms);
    ASSERT_TRUE(b);
    EXPECT_EQ(b->payload, "b");
    EXPECT_EQ(b->attempts, 1u);
    EXPECT_TRUE(q.ack(*b));
    EXPECT_EQ(q.pop(300ms), std::nullopt);  // "a" never comes back
    for (const auto& [c, n] : q.stats().in_flight) EXPECT_EQ(n, 0u) << c;
}

TEST(AckAndPop, ARefusedAckAndMoveAckAsAckDoesAndMoveNothing) {
    local_server srv(redcoord::testing::busy_config());
    connection_pool pool(srv.endpoint());
    reliable_queue q(pool, "ap-busy", quiet("c"));
    const auto a = first_of_two(q);
    redcoord::testing::busy_server busy(srv);
    busy.start(400ms);
    ack_and_pop_result r;
    EXPECT_NO_THROW(r = q.ack_and_pop(a));
    busy.stop();
    EXPECT_TRUE(r.acked);  // retried by ack() until the server answered
    EXPECT_FALSE(r.next);  // the refused LMOVE moved nothing
    EXPECT_EQ(q.consumer_id(), "c");
    EXPECT_GE(q.settle_retries(), 1u);
    EXPECT_EQ(srv.command({"LLEN", q.key()}).integer(), 1);
    EXPECT_EQ(srv.command({"LLEN", q.processing_key()}).integer(), 0);
}

TEST(QueueWorker, EachAckCarriesTheNextPop) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    reliable_queue q(pool, "ap-worker", quiet("c"));
    constexpr int n = 50;
    for (int i = 0; i < n; ++i) q.push("m" + std::to_string(i));
    const auto blocking = srv.command_calls("blmove");
    std::atomic<int> handled{0};
    queue_worker w(q,
                   [&](const delivery&) {
                       ++handled;
                       return handler_result::ack;
                   },
                   {.threads = 1, .poll_timeout = 5s});
    w.start();
    ASSERT_TRUE(eventually([&] { return w.stats().acked == n; }));
    // One blocking pop for the first message and one once the queue ran dry; every other
    // message came with the previous ack.
    EXPECT_LE(srv.command_calls("blmove") - blocking, 2);
    w.stop();
    EXPECT_EQ(handled.load(), n);
    EXPECT_EQ(w.stats().errors, 0u);
}

TEST(QueueWorker, AStopRightAfterAnAckLeavesNoMessageInFlight) {
    // The message an ack took may arrive after stop was requested: it is handled, never left
    // in the processing list of a consumer that goes on living.
    local_server srv;
    connection_pool pool(srv.endpoint());
    reliable_queue q(pool, "ap-stop", quiet("c"));
    std::vector<std::string> batch(2000, "m");
    (void)q.push_batch(batch);
    for (int round = 0; round < 10; ++round) {
        std::atomic<int> handled{0};
        queue_worker w(q,
                       [&](const delivery&) {
                           ++handled;
                           std::this_thread::sleep_for(200us);
                           return handler_result::ack;
                       },
                       {.threads = 2, .poll_timeout = 100ms});
        w.start();
        ASSERT_TRUE(eventually([&] { return handled.load() >= 5 + round; }));
        w.stop();
        SCOPED_TRACE("round " + std::to_string(round));
        EXPECT_EQ(w.stats().acked, static_cast<std::uint64_t>(handled.load()));
        for (const auto& [c, count] : q.stats().in_flight) EXPECT_EQ(count, 0u) << c;
    }
}
