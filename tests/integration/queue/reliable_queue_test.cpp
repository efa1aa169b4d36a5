#include <redcoord/core/errors.hpp>
#include <redcoord/queue/list_queue.hpp>
#include <redcoord/queue/reliable_queue.hpp>
#include <redcoord/testing/local_server.hpp>

#include "queue_test_util.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <thread>

using namespace redcoord;
using namespace std::chrono_literals;
using queue_test::quiet;
using queue_test::short_lease;
using redcoord::testing::local_server;

namespace {

// Makes `q`'s lease lapse now, as if its process had died.
void expire(local_server& srv, const reliable_queue& q) {
    auto hb = q.key() + ":heartbeat:" + q.consumer_id();
    ASSERT_EQ(srv.command({"DEL", hb}).integer(), 1);
}

}  // namespace

TEST(ReliableQueue, PushPopAck) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    reliable_queue q(pool, "basic", quiet("c1"));
    auto id = q.push("job");
    EXPECT_EQ(id.size(), 32u);
    auto d = q.pop(1s);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->id, id);
    EXPECT_EQ(d->payload, "job");
    EXPECT_EQ(d->attempts, 0u);
    EXPECT_FALSE(d->raw);
    EXPECT_EQ(d->consumer, "c1");
    EXPECT_LE(d->enqueued_at, std::chrono::system_clock::now());
    auto st = q.stats();
    EXPECT_EQ(st.ready, 0u);
    EXPECT_EQ(st.in_flight.at("c1"), 1u);
    EXPECT_TRUE(q.ack(*d));
    EXPECT_FALSE(q.ack(*d));  // exactly once
    EXPECT_EQ(q.stats().in_flight.at("c1"), 0u);
    EXPECT_EQ(q.try_pop(), std::nullopt);
}

TEST(ReliableQueue, DeliversInPushOrderAcrossBatches) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    reliable_queue q(pool, "order", quiet("c1"));
    q.push("p0");
    auto ids = q.push_batch(std::vector<std::string>{"p1", "p2", "p3"});
    ASSERT_EQ(ids.size(), 3u);
    EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), 3u);
    q.push("p4");
    for (int i = 0; i < 5; ++i) {
        auto d = q.pop(1s);
        ASSERT_TRUE(d);
        EXPECT_EQ(d->payload, "p" + std::to_string(i));
        EXPECT_TRUE(q.ack(*d));
    }
}

TEST(ReliableQueue, BlockingPopTimesOutAndWakesOnPush) {
    local_server srv;
    auto ep = srv.endpoint();
    ep.command_timeout = 300ms;  // blocks are split to stay under the reply deadline
    connection_pool pool(ep);
    reliable_queue q(pool, "block", quiet("c1"));
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(q.pop(700ms), std::nullopt);
    auto waited = std::chrono::steady_clock::now() - t0;
    EXPECT_GE(waited, 650ms);
    EXPECT_LT(waited, 5s);
    std::thread producer([&] {
        std::this_thread::sleep_for(300ms);
        reliable_queue(pool, "block").push("wake");
    });
    auto d = q.pop(10s);
    producer.join();
    ASSERT_TRUE(d);
    EXPECT_EQ(d->payload, "wake");
    EXPECT_TRUE(q.ack(*d));
}

TEST(ReliableQueue, ThousandIdenticalPayloadsAreAckedExactly) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    reliable_queue q(pool, "same", quiet("c1"));
    q.push_batch(std::vector<std::string>(1000, "same payload"));
    std::vector<delivery> got;
    while (auto d = q.try_pop()) got.push_back(std::move(*d));
    ASSERT_EQ(got.size(), 1000u);
    std::set<std::string> ids;
    for (auto& d : got) {
        EXPECT_EQ(d.payload, "same payload");
        ids.insert(d.id);
    }
    EXPECT_EQ(ids.size(), 1000u);
    // Ack in random order: each ack removes its own message, no other.
    std::shuffle(got.begin(), got.end(), std::mt19937(42));
    for (std::size_t i = 0; i < got.size(); ++i) {
        ASSERT_TRUE(q.ack(got[i]));
        ASSERT_EQ(q.stats().in_flight.at("c1"), got.size() - i - 1);
    }
    for (auto& d : got) EXPECT_FALSE(q.ack(d));
}

TEST(ReliableQueue, AckAfterRecoveryReportsNoLongerOurs) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    reliable_queue a(pool, "lapse", quiet("a")), b(pool, "lapse", quiet("b"));
    a.push("m1");
    a.push("m2");
    auto d1 = a.pop(1s);
    auto d2 = a.pop(1s);
    ASSERT_TRUE(d1 && d2);
    EXPECT_EQ(b.try_pop(), std::nullopt);  // registers b
    // b is alive: recovery leaves it alone; a's lease lapses: recovery takes its messages.
    EXPECT_EQ(b.recover().requeued, 0u);
    expire(srv, a);
    auto rr = b.recover();
    EXPECT_EQ(rr.requeued, 2u);
    EXPECT_EQ(rr.consumers, 1u);
    EXPECT_FALSE(a.ack(*d1));
    EXPECT_FALSE(a.nack(*d2));
    // Recovered messages go to the front, oldest first, with attempts + 1.
    auto r1 = b.pop(1s);
    auto r2 = b.pop(1s);
    ASSERT_TRUE(r1 && r2);
    EXPECT_EQ(r1->id, d1->id);
    EXPECT_EQ(r1->attempts, 1u);
    EXPECT_EQ(r2->id, d2->id);
    EXPECT_TRUE(b.ack(*r1));
    EXPECT_TRUE(b.ack(*r2));
    auto st = b.stats();
    EXPECT_EQ(st.in_flight.count("a"), 0u);
}

TEST(ReliableQueue, RecoveredMessagesGoAheadOfNewOnes) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    reliable_queue a(pool, "front", quiet("a")), b(pool, "front", quiet("b"));
    a.push("old");
    ASSERT_TRUE(a.pop(1s));
    a.push("new");
    expire(srv, a);
    EXPECT_EQ(b.recover().requeued, 1u);
    auto d = b.pop(1s);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->payload, "old");
}

TEST(ReliableQueue, PoisonMessageReachesDeadLettersViaNack) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    reliable_queue q(pool, "poison", quiet("c", 3));
    auto id = q.push("poison");
    q.push("fine");
    std::vector<std::uint32_t> attempts;
    for (int i = 0; i < 10; ++i) {
        auto d = q.pop(200ms);
        if (!d) break;
        if (d->payload == "fine") {
            EXPECT_TRUE(q.ack(*d));
            continue;
        }
        attempts.push_back(d->attempts);
        EXPECT_TRUE(q.nack(*d));
    }
    EXPECT_EQ(attempts, (std::vector<std::uint32_t>{0, 1, 2}));
    auto dead = q.dead_letters();
    ASSERT_EQ(dead.size(), 1u);
    EXPECT_EQ(dead[0].id, id);
    EXPECT_EQ(dead[0].payload, "poison");
    EXPECT_EQ(dead[0].attempts, 3u);
    EXPECT_EQ(q.stats().dead, 1u);
}

TEST(ReliableQueue, PoisonMessageReachesDeadLettersViaRecovery) {
    // A message that kills every consumer that takes it: each death is a lapsed lease.
    local_server srv;
    connection_pool pool(srv.endpoint());
    reliable_queue producer(pool, "crashy", quiet("p", 2));
    producer.push("kills consumers");
    for (int i = 0; i < 2; ++i) {
        reliable_queue victim(pool, "crashy", quiet("victim" + std::to_string(i), 2));
        auto d = victim.pop(1s);
        ASSERT_TRUE(d);
        EXPECT_EQ(d->attempts, static_cast<std::uint32_t>(i));
        expire(srv, victim);
        auto r = producer.recover();
        EXPECT_EQ(r.requeued + r.dead_lettered, 1u);
        EXPECT_FALSE(victim.ack(*d));
    }
    EXPECT_EQ(producer.size(), 0u);
    auto dead = producer.dead_letters();
    ASSERT_EQ(dead.size(), 1u);
    EXPECT_EQ(dead[0].attempts, 2u);
}

TEST(ReliableQueue, DeadLettersAreListedAndRequeued) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    reliable_queue q(pool, "dlq", quiet("c"));
    for (auto p : {"d1", "d2", "d3"}) q.push(p);
    for (int i = 0; i < 3; ++i) {
        auto d = q.pop(1s);
        ASSERT_TRUE(d);
        EXPECT_TRUE(q.nack(*d, nack_action::dead_letter));
    }
    auto dead = q.dead_letters();
    ASSERT_EQ(dead.size(), 3u);
    EXPECT_EQ(dead[0].payload, "d1");  // oldest first
    EXPECT_EQ(dead[2].payload, "d3");
    EXPECT_EQ(dead[0].attempts, 1u);
    auto two = q.dead_letters(2);
    ASSERT_EQ(two.size(), 2u);
    EXPECT_EQ(two[0].payload, "d1");
    EXPECT_EQ(q.requeue_dead(1), 1u);
    EXPECT_EQ(q.requeue_dead(), 2u);
    EXPECT_EQ(q.requeue_dead(), 0u);
    EXPECT_TRUE(q.dead_letters().empty());
    for (auto p : {"d1", "d2", "d3"}) {
        auto d = q.pop(1s);
        ASSERT_TRUE(d);
        EXPECT_EQ(d->payload, p);
        EXPECT_EQ(d->attempts, 0u);
        EXPECT_TRUE(q.ack(*d));
    }
}

TEST(ReliableQueue, RawPayloadsFromOtherClientsAreConsumed) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    reliable_queue q(pool, "raw", quiet("c", 2));
    std::string bin("raw\0\r\n", 6);
    srv.command({"LPUSH", q.key(), "from redis-cli"});
    srv.command({"LPUSH", q.key(), "from redis-cli"});
    list_queue(pool, "raw").push(bin);
    auto d1 = q.pop(1s);
    auto d2 = q.pop(1s);
    auto d3 = q.pop(1s);
    ASSERT_TRUE(d1 && d2 && d3);
    EXPECT_TRUE(d1->raw);
    EXPECT_EQ(d1->payload, "from redis-cli");
    EXPECT_EQ(d1->attempts, 0u);
    EXPECT_EQ(d1->id.rfind("raw-", 0), 0u);
    EXPECT_EQ(d3->payload, bin);
    EXPECT_TRUE(q.ack(*d1));
    EXPECT_TRUE(q.ack(*d2));
    EXPECT_FALSE(q.ack(*d1));
    // A raw message that fails gets an envelope: an identity and an attempt count.
    EXPECT_TRUE(q.nack(*d3));
    auto again = q.pop(1s);
    ASSERT_TRUE(again);
    EXPECT_FALSE(again->raw);
    EXPECT_EQ(again->payload, bin);
    EXPECT_EQ(again->attempts, 1u);
    EXPECT_TRUE(q.nack(*again));
    ASSERT_EQ(q.dead_letters().size(), 1u);
    EXPECT_EQ(q.dead_letters()[0].payload, bin);
}

TEST(ReliableQueue, RawPayloadsAreRecoveredToo) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    reliable_queue a(pool, "rawrec", quiet("a")), b(pool, "rawrec", quiet("b"));
    srv.command({"LPUSH", a.key(), "r1", "r1"});
    ASSERT_TRUE(a.pop(1s));
    ASSERT_TRUE(a.pop(1s));
    expire(srv, a);
    EXPECT_EQ(b.recover().requeued, 2u);
    auto x = b.pop(1s), y = b.pop(1s);
    ASSERT_TRUE(x && y);
    EXPECT_EQ(x->payload, "r1");
    EXPECT_EQ(x->attempts, 1u);
    EXPECT_NE(x->id, y->id);  // each got its own identity
}

TEST(ReliableQueue, BinaryAndHugePayloads) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    reliable_queue q(pool, "big", quiet("c"));
    std::string bin("\0\r\n\0\n\r", 6);
    std::string big(16 * 1024 * 1024, 'x');
    big[0] = '\0';
    big[1] = '\r';
    big[2] = '\n';
    q.push(bin);
    q.push(big);
    q.push("");
    auto d1 = q.pop(1s), d2 = q.pop(5s), d3 = q.pop(1s);
    ASSERT_TRUE(d1 && d2 && d3);
    EXPECT_EQ(d1->payload, bin);
    EXPECT_EQ(d2->payload, big);
    EXPECT_EQ(d3->payload, "");
    EXPECT_TRUE(q.ack(*d2));
    EXPECT_TRUE(q.nack(*d1));
    EXPECT_TRUE(q.ack(*d3));
    auto again = q.pop(1s);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->payload, bin);
    EXPECT_TRUE(q.ack(*again));
}

TEST(ReliableQueue, CloseReturnsUnackedMessagesAndUnregisters) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    reliable_queue watcher(pool, "close", quiet("w"));
    {
        reliable_queue q(pool, "close", quiet("c"));
        q.push("kept");
        auto d = q.pop(1s);
        ASSERT_TRUE(d);
        EXPECT_EQ(watcher.stats().in_flight.at("c"), 1u);
    }  // destructor closes
    auto st = watcher.stats();
    EXPECT_EQ(st.in_flight.count("c"), 0u);
    EXPECT_EQ(st.ready, 1u);
    auto d = watcher.pop(1s);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->payload, "kept");
    EXPECT_EQ(d->attempts, 1u);
}

TEST(ReliableQueue, HeartbeatKeepsALiveConsumerAndLapseIsRecoveredAutomatically) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    reliable_queue_options fast{.consumer_id = "live",
                                .visibility_timeout = 400ms,
                                .heartbeat_interval = 100ms,
                                .recover_interval = 100ms};
    reliable_queue live(pool, "hb", fast);
    live.push("m");
    auto d = live.pop(1s);
    ASSERT_TRUE(d);
    // Well past the visibility timeout: the background heartbeat keeps the lease.
    std::this_thread::sleep_for(1200ms);
    auto other_opts = fast;
    other_opts.consumer_id = "other";
    reliable_queue other(pool, "hb", other_opts);
    EXPECT_EQ(other.try_pop(), std::nullopt);  // starts other's periodic recovery
    EXPECT_EQ(other.recover().requeued, 0u);
    EXPECT_TRUE(live.ack(*d));
    // A consumer that stops heartbeating without closing (its process died).
    live.push("orphan");
    reliable_queue dead(pool, "hb", quiet("dead"));
    auto od = dead.pop(1s);
    ASSERT_TRUE(od);
    srv.command({"PEXPIRE", dead.key() + ":heartbeat:dead", "300"});
    // other's background recovery returns it without anyone calling recover().
    std::optional<delivery> got;
    for (int i = 0; i < 50 && !got; ++i) got = other.pop(100ms);
    ASSERT_TRUE(got);
    EXPECT_EQ(got->id, od->id);
    EXPECT_EQ(got->attempts, 1u);
    EXPECT_TRUE(other.ack(*got));
    EXPECT_FALSE(dead.ack(*od));
}

TEST(ReliableQueue, StatsShowReadyInFlightDeadAndExpired) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    reliable_queue a(pool, "stats", quiet("a")), b(pool, "stats", quiet("b"));
    a.push_batch(std::vector<std::string>{"1", "2", "3", "4", "5"});
    auto d1 = a.pop(1s), d2 = a.pop(1s), d3 = b.pop(1s);
    ASSERT_TRUE(d1 && d2 && d3);
    EXPECT_TRUE(b.nack(*d3, nack_action::dead_letter));
    expire(srv, a);
    auto st = b.stats();
    EXPECT_EQ(st.ready, 2u);
    EXPECT_EQ(st.dead, 1u);
    EXPECT_EQ(st.in_flight.at("a"), 2u);
    EXPECT_EQ(st.in_flight.at("b"), 0u);
    EXPECT_EQ(st.expired, std::vector<std::string>{"a"});
}

TEST(ReliableQueue, ConcurrentConsumersEachMessageOnce) {
    local_server srv;
    connection_pool pool(srv.endpoint(), {.max_size = 16});
    reliable_queue producer(pool, "conc", quiet("p"));
    std::vector<std::string> jobs;
    for (int i = 0; i < 2000; ++i) jobs.push_back("j" + std::to_string(i));
    producer.push_batch(jobs);
    std::mutex mu;
    std::multiset<std::string> seen;
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; ++t)
        ts.emplace_back([&, t] {
            reliable_queue q(pool, "conc", quiet("c" + std::to_string(t)));
            while (auto d = q.pop(200ms)) {
                EXPECT_TRUE(q.ack(*d));
                std::lock_guard lk(mu);
                seen.insert(d->payload);
            }
        });
    for (auto& t : ts) t.join();
    EXPECT_EQ(seen.size(), 2000u);
    EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()).size(), 2000u);
}

TEST(ReliableQueue, NameValidationAndServerDown) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    EXPECT_THROW(reliable_queue(pool, ""), invalid_argument);
    reliable_queue q(pool, "down", quiet("c"));
    q.push("x");
    srv.kill();
    EXPECT_THROW((void)q.pop(100ms), error);
    EXPECT_THROW(q.push("y"), error);
    srv.restart();
    // No persistence configured: the restarted server is empty, and the queue works again.
    EXPECT_NO_THROW(q.push("z"));
}

TEST(ReliableQueue, LostPopReplyRetiresTheIdentityAndTheMessageComesBack) {
    local_server srv;
    auto ep = srv.endpoint();
    ep.command_timeout = 300ms;
    connection_pool pool(ep);
    reliable_queue q(pool, "lostreply", short_lease("c"));
    EXPECT_EQ(q.try_pop(), std::nullopt);  // registers "c"
    q.push("m");
    // The server stops answering: the pop's BLMOVE is sent, its reply never arrives in time,
    // and the server may execute it later, moving "m" into c's processing list.
    srv.pause();
    EXPECT_THROW((void)q.pop(1s), timeout_error);
    srv.resume();
    // Retired ids are "<consumer_id>~<16 random hex digits>" (review Q2: never reused).
    const auto retired = q.consumer_id();
    EXPECT_EQ(retired.rfind("c~", 0), 0u);
    EXPECT_EQ(retired.size(), 2u + 16u);
    std::this_thread::sleep_for(50ms);
    const bool moved = srv.command({"LLEN", q.key() + ":processing:c"}).integer() == 1;
    std::printf("[ info     ] the lost BLMOVE %s\n", moved ? "moved the message" : "did not run");
    // Whether or not the lost BLMOVE ran, "m" reaches this (still live) consumer again:
    // the retired identity's lease expires and recovery returns what it held.
    std::optional<delivery> d;
    for (int i = 0; i < 50 && !d; ++i) d = q.pop(100ms);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->payload, "m");
    EXPECT_EQ(d->consumer, retired);
    EXPECT_EQ(d->attempts, moved ? 1u : 0u);
    EXPECT_TRUE(q.ack(*d));
    auto st = q.stats();
    EXPECT_EQ(st.in_flight.count("c"), 0u);
}

TEST(ReliableQueue, LostAckReplyRetiresTheIdentity) {
    local_server srv;
    auto ep = srv.endpoint();
    ep.command_timeout = 300ms;
    connection_pool pool(ep);
    reliable_queue q(pool, "lostack", short_lease("c"));
    q.push("m");
    auto d = q.pop(1s);
    ASSERT_TRUE(d);
    srv.pause();
    // A lost ack reply is outcome_unknown (docs/architecture.md, Errors), no longer timeout_error.
    EXPECT_THROW((void)q.ack(*d), outcome_unknown);
    srv.resume();
    // The late ack went through, so nothing comes back; the identity moved on anyway.
    EXPECT_EQ(q.consumer_id().rfind("c~", 0), 0u);
    EXPECT_EQ(q.consumer_id().size(), 2u + 16u);
    EXPECT_EQ(q.pop(1500ms), std::nullopt);
    EXPECT_EQ(q.stats().in_flight.count("c"), 0u);
    EXPECT_EQ(srv.command({"LLEN", q.key()}).integer(), 0);
}

TEST(ReliableQueue, RestartedConsumerWithTheSameIdReturnsWhatItsPredecessorHeld) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    reliable_queue producer(pool, "sameid", quiet("producer"));
    producer.push("held");
    std::string held_id;
    {
        // The predecessor takes the message and dies (no close: its keys stay as they were,
        // lease still valid).
        reliable_queue before(pool, "sameid", quiet("worker-1"));
        auto d = before.pop(1s);
        ASSERT_TRUE(d);
        held_id = d->id;
        auto hb = before.key() + ":heartbeat:worker-1";
        auto proc = before.processing_key();
        auto snapshot = srv.command({"LRANGE", proc, "0", "-1"}).elements().at(0).text();
        // Restore the "crashed" state the destructor's close() would otherwise clean up.
        before.close();
        srv.command({"RPUSH", proc, snapshot});
        srv.command({"SET", hb, "1", "PX", "60000"});
        srv.command({"SADD", before.key() + ":consumers", "worker-1"});
        ASSERT_EQ(srv.command({"DEL", before.key()}).integer(), 1);  // close() had requeued it
    }
    ASSERT_EQ(producer.size(), 0u);
    reliable_queue after(pool, "sameid", quiet("worker-1"));
    auto d = after.pop(1s);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->id, held_id);
    EXPECT_EQ(d->attempts, 1u);
    EXPECT_TRUE(after.ack(*d));
    EXPECT_EQ(after.stats().in_flight.at("worker-1"), 0u);
}

// A nack that fails half-way must leave the message where it was. Redis does not roll a
// script back on an error, so a script that removed the message from the processing list
// before pushing it lost it whenever the push failed. The push is made to fail here by a
// destination holding a string (WRONGTYPE), for the requeue and the dead-letter way.
TEST(ReliableQueue, NackThatFailsLosesNothing) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    auto o = quiet("c");
    // A refused nack is retried while the lease holds: a short lease keeps the test short.
    o.visibility_timeout = 1s;
    o.heartbeat_interval = 300ms;
    reliable_queue q(pool, "nackfail", o);
    reliable_queue rescuer(pool, "nackfail", quiet("rescuer"));
    q.push("requeued one");
    q.push("dead-lettered one");
    auto first = q.pop(1s);
    auto second = q.pop(1s);
    ASSERT_TRUE(first && second);
    const auto pkey = q.processing_key();

    ASSERT_EQ(srv.command({"SET", q.key(), "not a list"}).text(), "OK");
    EXPECT_THROW((void)q.nack(*first), reply_error);
    EXPECT_EQ(srv.command({"LLEN", pkey}).integer(), 2)
        << "a nack whose requeue failed lost its message";

    ASSERT_EQ(srv.command({"SET", q.dead_key(), "not a list"}).text(), "OK");
    EXPECT_THROW((void)q.nack(*second, nack_action::dead_letter), reply_error);
    EXPECT_EQ(srv.command({"LLEN", pkey}).integer(), 2)
        << "a nack whose dead-lettering failed lost its message";

    // Both come back: the failed nacks gave the identity up, its lease lapses, and
    // recovery returns what its processing list still holds.
    ASSERT_EQ(srv.command({"DEL", q.key(), q.dead_key()}).integer(), 2);
    std::size_t requeued = 0;
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (requeued < 2 && std::chrono::steady_clock::now() < until) {
        requeued += rescuer.recover().requeued;
        std::this_thread::sleep_for(50ms);
    }
    ASSERT_EQ(requeued, 2u);
    std::set<std::string> payloads;
    for (int i = 0; i < 2; ++i) {
        auto d = rescuer.pop(1s);
        ASSERT_TRUE(d);
        EXPECT_EQ(d->attempts, 1u);
        payloads.insert(d->payload);
        EXPECT_TRUE(rescuer.ack(*d));
    }
    EXPECT_EQ(payloads, (std::set<std::string>{"requeued one", "dead-lettered one"}));
}

// requeue_dead() moves dead letters back to the queue; when the queue cannot take one
// (WRONGTYPE here), the letter stays dead instead of vanishing.
TEST(ReliableQueue, RequeueDeadThatFailsLosesNothing) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    reliable_queue q(pool, "requeuefail", quiet("c"));
    q.push("letter");
    auto d = q.pop(1s);
    ASSERT_TRUE(d);
    ASSERT_TRUE(q.nack(*d, nack_action::dead_letter));
    ASSERT_EQ(q.dead_letters().size(), 1u);

    ASSERT_EQ(srv.command({"SET", q.key(), "not a list"}).text(), "OK");
    EXPECT_THROW((void)q.requeue_dead(), reply_error);
    ASSERT_EQ(q.dead_letters().size(), 1u) << "a requeue that failed lost the dead letter";

    ASSERT_EQ(srv.command({"DEL", q.key()}).integer(), 1);
    EXPECT_EQ(q.requeue_dead(), 1u);
    auto again = q.pop(1s);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->payload, "letter");
    EXPECT_TRUE(q.ack(*again));
}
