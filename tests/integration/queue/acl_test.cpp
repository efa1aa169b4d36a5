// The queue part as a least-privilege ACL user (issue 18): a user created from exactly
// queue_acl_needs() runs FIFO/LIFO list queues, the reliable queue (push, blocking and
// non-blocking pops, ack, nack to the queue and to the dead letters, requeue_dead, recovery,
// stats) and a queue_worker; a user missing one needed command or pattern gets
// permission_error naming it, never a wait until the pop's timeout.

#include <redcoord/queue/acl.hpp>
#include <redcoord/queue/async.hpp>
#include <redcoord/queue/list_queue.hpp>
#include <redcoord/queue/queue_worker.hpp>
#include <redcoord/queue/reliable_queue.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/wait.hpp>

#include "../acl_support.hpp"

#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::eventually;
using redcoord::testing::expect_refused;
using redcoord::testing::expect_refused_any;
using redcoord::testing::local_server;
using redcoord::testing::make_acl_user;
using redcoord::testing::without_command;
namespace asio = boost::asio;

namespace {

void expect_true(bool ok, const char* what) {
    if (!ok) throw std::runtime_error(what);
}

void list_scenarios(connection_pool& pool, const std::string& prefix, const std::string& tag) {
    for (auto order : {queue_order::fifo, queue_order::lifo}) {
        list_queue q(pool, "list" + tag, {.order = order, .prefix = prefix});
        q.push("a");
        q.push_batch(std::vector<std::string>{"b", "c"});
        expect_true(q.size() == 3, "list size");
        expect_true(q.pop(1s) == std::optional<std::string>(order == queue_order::fifo ? "a" : "c"),
                    "list pop order");
        expect_true(q.try_pop().has_value(), "list try_pop");
        expect_true(q.pop(1s).has_value(), "list last pop");
        expect_true(!q.pop(50ms), "list blocking pop on an empty list");  // BRPOP / BLPOP
    }
}

void reliable_scenarios(connection_pool& pool, const std::string& prefix, const std::string& tag) {
    reliable_queue_options o;
    o.prefix = prefix;
    reliable_queue q(pool, "jobs" + tag, o);
    (void)q.push("one");
    (void)q.push_batch(std::vector<std::string>{"two", "three"});
    expect_true(q.size() == 3, "reliable size");
    auto d1 = q.pop(1s);
    expect_true(d1 && d1->payload == "one", "reliable pop");
    expect_true(q.ack(*d1), "ack");
    auto d2 = q.pop(1s);
    expect_true(d2.has_value(), "second pop");
    expect_true(q.nack(*d2, nack_action::requeue), "nack requeue");
    auto d3 = q.pop(1s);
    expect_true(d3.has_value(), "third pop");
    expect_true(q.nack(*d3, nack_action::dead_letter), "nack dead");
    expect_true(q.dead_letters().size() == 1, "dead letters");
    expect_true(q.requeue_dead() == 1, "requeue dead");
    (void)q.recover();
    (void)q.stats();
    auto now = q.pop(0ms);  // the non-blocking LMOVE
    expect_true(now.has_value(), "non-blocking pop");
    q.close();  // hands the unacked message back to the front (RPUSH in the release script)
    reliable_queue again(pool, "jobs" + tag, o);
    while (auto d = again.pop(200ms)) expect_true(again.ack(*d), "drain ack");
    expect_true(!again.pop(300ms), "blocking pop on an empty queue");
    again.close();
}

void worker_scenario(connection_pool& pool, const std::string& prefix, const std::string& tag) {
    reliable_queue_options o;
    o.prefix = prefix;
    reliable_queue q(pool, "work" + tag, o);
    for (int i = 0; i < 10; ++i) (void)q.push("job-" + std::to_string(i));
    std::atomic<int> done{0};
    queue_worker w(q,
                   [&](const delivery& d) {
                       // Every job fails once: requeued, then acked.
                       if (d.attempts == 0) return handler_result::requeue;
                       ++done;
                       return handler_result::ack;
                   },
                   {.threads = 2});
    w.start();
    expect_true(eventually([&] { return done.load() == 10; }, 10s), "worker did not finish");
    w.stop();
    expect_true(w.stats().errors == 0 && !w.last_error(), "worker errors");
}

}  // namespace

TEST(QueueAcl, EverythingRunsAsUserWithExactlyTheQueueRules) {
    local_server server;
    for (const std::string prefix : {std::string(default_prefix), std::string("app1:")}) {
        SCOPED_TRACE(prefix);
        connection_pool pool(make_acl_user(server, "queue_" + std::to_string(prefix.size()),
                                           queue_acl_needs(prefix)));
        list_scenarios(pool, prefix, "");
        reliable_scenarios(pool, prefix, "");
        worker_scenario(pool, prefix, "");
    }
}

TEST(QueueAcl, ReplicatedPushRunsAsTheUser) {
    local_server master;
    auto replica = local_server::acknowledging_replica_of(master);
    connection_pool pool(make_acl_user(master, "queue_replicated", queue_acl_needs()));
    reliable_queue_options o;
    o.replication.replicas = 1;
    o.replication.timeout = 2s;
    reliable_queue q(pool, "rep", o);
    (void)q.push("x");
    auto d = q.pop(1s);
    ASSERT_TRUE(d);
    EXPECT_TRUE(q.ack(*d));
}

// Every needed command removed in turn (the whole list but the exceptions noted below).
TEST(QueueAcl, MissingAnyNeededCommandIsPermissionErrorNamingIt) {
    local_server server;
    const auto needs = queue_acl_needs();
    int n = 0;
    for (const auto& cmd : needs.commands) {
        SCOPED_TRACE(cmd);
        connection_pool pool(
            make_acl_user(server, "queue_no_" + std::to_string(n++), without_command(needs, cmd)));
        if (cmd == "role") {
            list_scenarios(pool, std::string(default_prefix), cmd);  // Sentinel and pub/sub only
            continue;
        }
        if (cmd == "multi" || cmd == "exec") {
            // The lease-renewing transaction pipelined before a BLMOVE runs when the consumer's
            // lease has aged past a quarter of the visibility timeout: with heartbeats every
            // 500 ms, blocks of 350 ms start at ever other points of the heartbeat's cycle and
            // reach it within a few pops. Its refusal surfaces when the BLMOVE sharing its
            // round trip returns (one block). The bound allows for the pops it takes to get
            // there on a loaded machine (at most three by the arithmetic, 2.8 s seen under -j2).
            reliable_queue_options o;
            o.visibility_timeout = 1000ms;
            o.heartbeat_interval = 500ms;
            reliable_queue q(pool, "renew-" + cmd, o);
            expect_refused(cmd, 5s, [&] {
                const auto until = std::chrono::steady_clock::now() + 10s;
                while (std::chrono::steady_clock::now() < until) (void)q.pop(350ms);
            });
            continue;
        }
        if (cmd == "publish" || cmd == "subscribe" || cmd == "unsubscribe") {
            // Only async_pop's push notices use them: refused, a push still succeeds (its
            // notice is dropped, the message is in) and the blocking calls never need them.
            reliable_scenarios(pool, std::string(default_prefix), cmd);
            // An async_pop that must wait for a notice it can never hear says so.
            if (cmd == "subscribe") {
                reliable_queue q(pool, "async-" + cmd);
                expect_refused(cmd, 5s, [&] { (void)async_pop(q, 30s, asio::use_future).get(); });
            }
            continue;
        }
        if (cmd == "wait") {
            reliable_queue_options o;
            o.replication.replicas = 1;
            o.replication.timeout = 5s;
            reliable_queue q(pool, "rep-" + cmd, o);
            expect_refused(cmd, 2s, [&] { (void)q.push("x"); });
            continue;
        }
        expect_refused(cmd, 2s, [&] {
            list_scenarios(pool, std::string(default_prefix), cmd);
            reliable_scenarios(pool, std::string(default_prefix), cmd);
        });
    }
}

TEST(QueueAcl, WorkerReportsTheRefusalItKeepsRetrying) {
    local_server server;
    connection_pool pool(make_acl_user(server, "queue_worker_no_blmove",
                                       without_command(queue_acl_needs(), "blmove")));
    reliable_queue q(pool, "w");
    queue_worker w(q, [](const delivery&) { return handler_result::ack; });
    expect_refused("blmove", 2s, [&] {
        w.start();
        if (!eventually([&] { return w.last_error() != nullptr; }, 2s)) return;
        std::rethrow_exception(w.last_error());
    });
    w.stop();
}

// A user without the queue's channels: the SUBSCRIBE of a waiting async_pop is refused, and
// the pop ends with permission_error at once instead of polling until its timeout. A pop that
// finds a message needs no channel.
TEST(QueueAcl, AsyncPopWithoutTheChannelsIsPermissionError) {
    local_server server;
    auto no_channels = queue_acl_needs();
    no_channels.channel_patterns.clear();
    connection_pool pool(make_acl_user(server, "queue_no_channels", no_channels));
    reliable_queue q(pool, "async");
    (void)q.push("there");
    auto d = async_pop(q, 30s, asio::use_future).get();
    ASSERT_TRUE(d);
    EXPECT_TRUE(q.ack(*d));
    const auto took =
        expect_refused("subscribe", 5s, [&] { (void)async_pop(q, 30s, asio::use_future).get(); });
    std::fprintf(stderr, "[ measure  ] refused async_pop ended after %lld ms\n",
                 static_cast<long long>(took.count()));
}

TEST(QueueAcl, MissingKeyPatternIsPermissionError) {
    local_server server;
    auto no_keys = queue_acl_needs();
    no_keys.key_patterns.clear();
    connection_pool keyless(make_acl_user(server, "queue_no_keys", no_keys));
    list_queue l(keyless, "l");
    expect_refused("lpush", 2s, [&] { l.push("x"); });
    expect_refused("rpop", 2s, [&] { (void)l.pop(10s); });
    reliable_queue q(keyless, "q");
    expect_refused("lpush", 2s, [&] { (void)q.push("x"); });
    expect_refused_any({"eval", "evalsha", "lmove", "blmove", "sadd", "multi"}, 2s,
                       [&] { (void)q.pop(10s); });
}
