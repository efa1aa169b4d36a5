// Message and consumer identities, envelopes and the renewal paths of pop (review
// 2026-11-23: Q2, Q4, Q5, Q6, Q7).

#include "queue_test_util.hpp"

#include <redcoord/core/errors.hpp>
#include <redcoord/queue/reliable_queue.hpp>
#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

#include <set>
#include <thread>

using namespace redcoord;
using namespace std::chrono_literals;
using redcoord::testing::local_server;
using queue_test::quiet;

namespace {

// A raw payload of 48 bytes that starts like an envelope.
std::string looks_like_an_envelope() {
    std::string p("\0RQ\1", 4);
    for (int i = 0; i < 44; ++i) p.push_back(static_cast<char>(i * 37 + 5));
    return p;
}

}  // namespace

TEST(ReliableQueue, Q7_ForeignPayloadWithMagicIsDeliveredByteExact) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    reliable_queue q(pool, "q7", quiet("a")), other(pool, "q7", quiet("b"));
    const auto raw = looks_like_an_envelope();
    srv.command({"LPUSH", q.key(), raw});
    auto d = q.pop(1s);
    ASSERT_TRUE(d);
    EXPECT_TRUE(d->raw);
    EXPECT_EQ(d->payload, raw);
    // nack wraps it: the payload stays byte-exact.
    EXPECT_TRUE(q.nack(*d));
    auto again = q.pop(1s);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->payload, raw);
    EXPECT_EQ(again->attempts, 1u);
    // Recovery after a lapsed lease: still byte-exact.
    ASSERT_EQ(srv.command({"DEL", q.key() + ":heartbeat:a"}).integer(), 1);
    EXPECT_EQ(other.try_pop(), std::nullopt);  // registers b
    EXPECT_EQ(other.recover().requeued, 1u);
    auto third = other.pop(1s);
    ASSERT_TRUE(third);
    EXPECT_EQ(third->payload, raw);
    EXPECT_EQ(third->attempts, 2u);
    EXPECT_TRUE(other.ack(*third));
}

TEST(ReliableQueue, Q6_MessageIdsCarry128RandomBits) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    std::set<std::string> counters;
    for (int i = 0; i < 4; ++i) {
        // A short-lived producer: its first id must not start a predictable sequence.
        auto id = reliable_queue(pool, "q6").push("x");
        ASSERT_EQ(id.size(), 32u);
        counters.insert(id.substr(16));
    }
    EXPECT_EQ(counters.size(), 4u);
    EXPECT_EQ(counters.count("0000000000000000"), 0u);
}

TEST(ReliableQueue, Q2_RetiredIdsDoNotRepeatAcrossIncarnations) {
    local_server srv;
    auto ep = srv.endpoint();
    ep.command_timeout = 300ms;
    connection_pool pool(ep);
    auto retired_id = [&] {
        reliable_queue q(pool, "q2", quiet("c"));
        EXPECT_EQ(q.try_pop(), std::nullopt);
        srv.pause();
        EXPECT_THROW((void)q.pop(1s), timeout_error);
        srv.resume();
        return q.consumer_id();
    };
    const auto first = retired_id();
    const auto second = retired_id();
    EXPECT_NE(first, "c");
    EXPECT_NE(second, "c");
    EXPECT_NE(first, second);
    EXPECT_EQ(first.rfind("c~", 0), 0u);
}

TEST(ReliableQueue, Q4_HeartbeatLostEarlyForcesTheSlowPath) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    reliable_queue q(pool, "q4",
                     {.consumer_id = "c",
                      .visibility_timeout = 4000ms,
                      .heartbeat_interval = 100ms,
                      .recover_interval = 0ms});
    EXPECT_EQ(q.try_pop(), std::nullopt);
    // The server loses the heartbeat long before its TTL (eviction, a clock step, a DEL).
    ASSERT_EQ(srv.command({"DEL", q.key() + ":heartbeat:c"}).integer(), 1);
    std::this_thread::sleep_for(350ms);  // a few background renewals notice it
    EXPECT_GE(q.lease_losses(), 1u);
    const auto exec_before = srv.command_calls("exec");
    q.push("m");
    auto d = q.pop(200ms);
    ASSERT_TRUE(d);
    // The local lease bound is no longer trusted: the move went after a renewal in the same
    // round trip (MULTI/EXEC + BLMOVE), not as a bare BLMOVE.
    EXPECT_EQ(srv.command_calls("exec") - exec_before, 1);
    EXPECT_TRUE(q.ack(*d));
}

TEST(ReliableQueue, Q5_MessageMovedAfterAFailedRenewalIsDelivered) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    reliable_queue q(pool, "q5",
                     {.consumer_id = "c",
                      .visibility_timeout = 400ms,
                      .heartbeat_interval = 100ms,
                      .recover_interval = 0ms});
    EXPECT_EQ(q.try_pop(), std::nullopt);
    // Renewals are refused from now on (SADD denied), so the local lease runs out and the
    // next blocking pop takes the MULTI/EXEC + BLMOVE path: EXEC aborts, BLMOVE still moves.
    srv.command({"ACL", "SETUSER", "default", "-sadd"});
    std::this_thread::sleep_for(500ms);
    srv.command({"LPUSH", q.key(), "m"});
    std::optional<delivery> d;
    EXPECT_NO_THROW(d = q.pop(300ms));
    srv.command({"ACL", "SETUSER", "default", "+sadd"});
    ASSERT_TRUE(d);
    EXPECT_EQ(d->payload, "m");
    EXPECT_TRUE(q.ack(*d));
}
