// async_pop (redcoord/queue/async.hpp) against real redis-server processes: callbacks,
// futures, coroutines on the caller's io_context, a wait woken by a push from another thread,
// timeouts, cancellation that loses nothing, typed errors, and the endpoints it refuses.

#include <redcoord/core/errors.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/queue/async.hpp>
#include <redcoord/queue/reliable_queue.hpp>
#include <redcoord/testing/async.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/wait.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/system/system_error.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <future>
#include <mutex>
#include <set>
#include <thread>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::eventually;
using redcoord::testing::local_server;
namespace asio = boost::asio;

namespace {

struct one_server : redcoord::testing::runtime_server {
    reliable_queue q{pool, "jobs"};
};

// A queue whose pending pops never re-check on their own within a test: only a push
// notice can end their wait before the deadline.
struct notice_only {
    local_server server;
    std::shared_ptr<runtime> rt = runtime::create();
    connection_pool pool{server.endpoint(), {}, rt};
    reliable_queue q{pool, "jobs", {.async_pop_recheck = std::chrono::hours(1)}};
};

using pop_result = std::pair<std::exception_ptr, std::optional<delivery>>;

// Calls of the commands a pop attempt sends (LMOVE, and the pop script by EVALSHA or EVAL)
// the server counted so far (INFO commandstats).
std::uint64_t pop_commands(local_server& server) {
    const auto info = server.command({"INFO", "commandstats"}).text();
    std::uint64_t n = 0;
    for (const char* cmd :
         {"cmdstat_lmove:calls=", "cmdstat_evalsha:calls=", "cmdstat_eval:calls="}) {
        const auto at = info.find(cmd);
        if (at != std::string::npos) n += std::stoull(info.substr(at + std::strlen(cmd)));
    }
    return n;
}

}  // namespace

TEST(AsyncPop, CallbackGetsAMessagePushedWhileItWaits) {
    one_server s;
    std::promise<pop_result> done;
    async_pop(s.q, 20s, [&](std::exception_ptr e, std::optional<delivery> d) {
        done.set_value({e, std::move(d)});
    });
    auto f = done.get_future();
    EXPECT_EQ(f.wait_for(300ms), std::future_status::timeout);  // nothing pushed yet
    const auto id = s.q.push("hello");
    ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
    auto [e, d] = f.get();
    ASSERT_FALSE(e);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->id, id);
    EXPECT_EQ(d->payload, "hello");
    EXPECT_EQ(s.q.stats().in_flight[s.q.consumer_id()], 1u);  // moved under our lease
    EXPECT_TRUE(s.q.ack(*d));
    EXPECT_EQ(s.q.size(), 0u);
}

TEST(AsyncPop, FutureTimesOutWithNothingAndZeroIsOneAttempt) {
    one_server s;
    auto f = async_pop(s.q, 200ms, asio::use_future);
    ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
    EXPECT_FALSE(f.get());
    EXPECT_FALSE(async_pop(s.q, 0ms, asio::use_future).get());
    s.q.push("x");
    auto d = async_pop(s.q, 0ms, asio::use_future).get();
    ASSERT_TRUE(d);
    EXPECT_EQ(d->payload, "x");
    EXPECT_TRUE(s.q.nack(*d));
    // A nacked message comes back, one attempt more.
    auto again = s.q.pop(5s);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->attempts, 1u);
}

TEST(AsyncPop, CoroutinesOnTheCallersIoContextAreWokenByAnotherThreadsPushes) {
    local_server server;
    asio::io_context io;
    auto rt = runtime::create(io);
    connection_pool pool(server.endpoint(), {}, rt);
    reliable_queue q(pool, "jobs");
    // The producer: its own runtime and pool, on a thread of its own.
    auto prt = runtime::create();
    connection_pool ppool(server.endpoint(), {}, prt);
    reliable_queue producer(ppool, "jobs");
    std::vector<std::string> got;
    std::thread pusher([&] {
        std::this_thread::sleep_for(200ms);
        for (int i = 0; i < 3; ++i) producer.push("m" + std::to_string(i));
    });
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            for (int i = 0; i < 3; ++i) {
                auto d = co_await async_pop(q, 60s, asio::use_awaitable);
                got.push_back(d ? d->payload : "timeout");
                if (d) (void)q.ack(*d);
            }
            auto none = co_await async_pop(q, 100ms, asio::use_awaitable);
            got.push_back(none ? none->payload : "timeout");
        },
        asio::detached);
    io.run();  // the test's thread is the event loop
    pusher.join();
    EXPECT_EQ(got, (std::vector<std::string>{"m0", "m1", "m2", "timeout"}));
}

TEST(AsyncPop, CancellationMidWaitEndsAtOnceAndMovesNothing) {
    one_server s;
    asio::cancellation_signal cancel;
    std::promise<pop_result> done;
    async_pop(s.q, 30s,
              asio::bind_cancellation_slot(cancel.slot(),
                                           [&](std::exception_ptr e, std::optional<delivery> d) {
                                               done.set_value({e, std::move(d)});
                                           }));
    std::this_thread::sleep_for(150ms);
    asio::post(s.rt->io(), [&] { cancel.emit(asio::cancellation_type::terminal); });
    auto f = done.get_future();
    ASSERT_EQ(f.wait_for(5s), std::future_status::ready) << "the cancelled pop did not end";
    auto [e, d] = f.get();
    EXPECT_TRUE(redcoord::testing::is_operation_aborted(e));
    EXPECT_FALSE(d);
    s.q.push("after");
    std::this_thread::sleep_for(300ms);  // a pop still polling would take it
    EXPECT_EQ(s.q.size(), 1u);
}

// Pops cancelled at every moment of their life, some with an attempt in flight, while
// messages arrive: each message is delivered exactly once, by a pop or by the final drain.
TEST(AsyncPop, CancelledPopsLoseNothingAndDeliverNothingTwice) {
    one_server s;
    constexpr int n = 200;
    std::vector<std::string> pushed;
    for (int i = 0; i < n; ++i) pushed.push_back("p" + std::to_string(i));
    std::mutex mu;
    std::multiset<std::string> seen;
    std::atomic<int> ended{0}, cancelled{0};
    std::thread producer([&] {
        for (const auto& p : pushed) {
            s.q.push(p);
            if (std::stoi(p.substr(1)) % 20 == 0) std::this_thread::sleep_for(2ms);
        }
    });
    constexpr int pops = 300;
    std::vector<std::unique_ptr<asio::cancellation_signal>> signals;
    for (int i = 0; i < pops; ++i) signals.push_back(std::make_unique<asio::cancellation_signal>());
    for (int i = 0; i < pops; ++i) {
        async_pop(s.q, 2s,
                  asio::bind_cancellation_slot(
                      signals[i]->slot(), [&](std::exception_ptr e, std::optional<delivery> d) {
                          if (redcoord::testing::is_operation_aborted(e)) ++cancelled;
                          if (d) {
                              std::lock_guard l(mu);
                              seen.insert(d->payload);
                              EXPECT_TRUE(s.q.ack(*d));
                          }
                          ++ended;
                      }));
        if (i % 2 == 0) {
            auto* sig = signals[i].get();
            asio::post(s.rt->io(), [sig] { sig->emit(asio::cancellation_type::terminal); });
        }
    }
    producer.join();
    ASSERT_TRUE(eventually([&] { return ended.load() == pops; }, 60s));
    EXPECT_GT(cancelled.load(), 0);
    while (auto d = s.q.pop(200ms)) {
        std::lock_guard l(mu);
        seen.insert(d->payload);
        EXPECT_TRUE(s.q.ack(*d));
    }
    EXPECT_EQ(seen, std::multiset<std::string>(pushed.begin(), pushed.end()));
    EXPECT_TRUE(s.q.stats().in_flight[s.q.consumer_id()] == 0u);
}

TEST(AsyncPop, ErrorsAreTypedAsTheBlockingPopThrowsThem) {
    {
        local_server server({.password = "right"});
        auto ep = server.endpoint();
        ep.password = "wrong";
        auto rt = runtime::create();
        connection_pool pool(ep, {}, rt);
        reliable_queue q(pool, "jobs");
        EXPECT_THROW((void)async_pop(q, 1s, asio::use_future).get(), auth_error);
    }
    {
        endpoint ep;
        ep.port = redcoord::testing::free_port();
        auto rt = runtime::create();
        connection_pool pool(ep, {}, rt);
        reliable_queue q(pool, "jobs");
        EXPECT_THROW((void)async_pop(q, 1s, asio::use_future).get(), connection_error);
    }
    {
        one_server s;
        EXPECT_THROW((void)async_pop(s.q, -1ms, asio::use_future), invalid_argument);
        (void)s.q.try_pop();  // started
        s.server.kill();
        EXPECT_THROW((void)async_pop(s.q, 2s, asio::use_future).get(), connection_error);
    }
}

TEST(AsyncPop, ClusterAndReplicasAreRefusedBeforeAnythingIsSent) {
    local_server server;
    auto rt = runtime::create();
    auto refused = [&](endpoint ep, reliable_queue_options o = {}) {
        connection_pool pool(ep, {}, rt);
        reliable_queue q(pool, "jobs", o);
        EXPECT_THROW((void)async_pop(q, 1s, asio::use_future), invalid_argument) << ep.to_string();
    };
    auto cluster = server.endpoint();
    cluster.cluster_nodes.push_back({"127.0.0.1", server.endpoint().port});
    refused(cluster);
    reliable_queue_options o;
    o.replication.replicas = 1;
    refused(server.endpoint(), o);
    EXPECT_EQ(server.command({"EXISTS", "redcoord:queue:{jobs}:consumers"}).integer(), 0);
}

// 200 pops pending on an empty queue wait for a push notice, not a poll: over a second the
// server counts (next to nothing of) their attempts, and a push still reaches them.
TEST(AsyncPop, ManyPendingPopsIssueNoCommandsWhileTheQueueIsEmpty) {
    notice_only s;
    constexpr int pops = 200;
    std::atomic<int> ended{0}, delivered{0};
    for (int i = 0; i < pops; ++i)
        async_pop(s.q, 120s, [&](const std::exception_ptr& e, std::optional<delivery> d) {
            EXPECT_FALSE(e);
            if (d) {
                ++delivered;
                EXPECT_TRUE(s.q.ack(*d));
            }
            ++ended;
        });
    // Every pop made its first attempt and settled into its wait.
    std::this_thread::sleep_for(1s);
    const auto before = pop_commands(s.server);
    std::this_thread::sleep_for(1s);
    const auto idle = pop_commands(s.server) - before;
    std::fprintf(stderr, "[ measure  ] %d idle pending async_pops: %llu pop commands in 1 s\n",
                 pops, static_cast<unsigned long long>(idle));
    // The consumer's upkeep may run a script or two meanwhile; the pops themselves none.
    EXPECT_LE(idle, 10u);
    for (int i = 0; i < pops; ++i) s.q.push("m" + std::to_string(i));
    ASSERT_TRUE(eventually([&] { return ended.load() == pops; }, 60s));
    EXPECT_EQ(delivered.load(), pops);
}

// Calls of `command` (upper case) the server counted so far (INFO commandstats).
std::uint64_t calls_of(local_server& server, const std::string& command) {
    const auto info = server.command({"INFO", "commandstats"}).text();
    std::string lower = command;
    for (auto& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const std::string field = "cmdstat_" + lower + ":calls=";
    const auto at = info.find(field);
    return at == std::string::npos ? 0 : std::stoull(info.substr(at + field.size()));
}

// The slow re-check is the queue object's, not each pop's: 100 pops pending on an empty queue
// with a 100 ms re-check cost the server one LLEN a period, no attempts; a message that
// reaches the ready list without a notice (a server-side LMOVE from another queue) is found
// by it and taken by one pop.
TEST(AsyncPop, PendingPopsShareOneRecheck) {
    local_server server;
    auto rt = runtime::create();
    connection_pool pool{server.endpoint(), {}, rt};
    reliable_queue q{pool, "jobs", {.async_pop_recheck = 100ms}};
    constexpr int pops = 100;
    std::atomic<int> ended{0}, delivered{0};
    std::string taken;
    std::mutex mu;
    for (int i = 0; i < pops; ++i)
        async_pop(q, 120s, [&](const std::exception_ptr& e, std::optional<delivery> d) {
            EXPECT_FALSE(e);
            if (d) {
                std::lock_guard l(mu);
                taken = d->payload;
                ++delivered;
                EXPECT_TRUE(q.ack(*d));
            }
            ++ended;
        });
    std::this_thread::sleep_for(1s);  // every pop made its first attempt and waits
    const auto attempts = pop_commands(server);
    const auto llens = calls_of(server, "LLEN");
    std::this_thread::sleep_for(1s);
    const auto idle_attempts = pop_commands(server) - attempts;
    const auto idle_llens = calls_of(server, "LLEN") - llens;
    std::fprintf(stderr,
                 "[ measure  ] %d idle pending async_pops, re-check 100 ms: %llu attempts, "
                 "%llu LLEN in 1 s\n",
                 pops, static_cast<unsigned long long>(idle_attempts),
                 static_cast<unsigned long long>(idle_llens));
    EXPECT_LE(idle_attempts, 10u);  // the consumer's upkeep may run a script or two
    EXPECT_GE(idle_llens, 3u);      // about ten; fewer only on a starved machine
    EXPECT_LE(idle_llens, 15u);
    // A message no notice announces.
    connection_pool other_pool{server.endpoint()};
    reliable_queue staging{other_pool, "staging"};
    (void)staging.push("unannounced");
    ASSERT_EQ(server.command({"LMOVE", staging.key(), q.key(), "RIGHT", "LEFT"}).text().empty(),
              false);
    ASSERT_TRUE(eventually([&] { return delivered.load() == 1; }, 30s));
    {
        std::lock_guard l(mu);
        EXPECT_EQ(taken, "unannounced");
    }
    for (int i = 1; i < pops; ++i) (void)q.push("m" + std::to_string(i));
    ASSERT_TRUE(eventually([&] { return ended.load() == pops; }, 60s));
    EXPECT_EQ(delivered.load(), pops);
}

// The notice, not a re-check, ends the wait: with the re-check an hour away, a pop pending
// on one client completes after another client's push, long before its own 2 min timeout.
TEST(AsyncPop, APushFromAnotherClientEndsAPendingPopWithoutItsRecheck) {
    notice_only s;
    std::promise<pop_result> done;
    async_pop(s.q, 120s, [&](std::exception_ptr e, std::optional<delivery> d) {
        done.set_value({e, std::move(d)});
    });
    auto f = done.get_future();
    // Settled into its wait (its link confirmed and the queue found empty).
    EXPECT_EQ(f.wait_for(1s), std::future_status::timeout);
    connection_pool other_pool{s.server.endpoint()};
    reliable_queue producer{other_pool, "jobs"};
    const auto id = producer.push("from afar");
    ASSERT_EQ(f.wait_for(60s), std::future_status::ready);
    auto [e, d] = f.get();
    ASSERT_FALSE(e);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->id, id);
    EXPECT_TRUE(s.q.ack(*d));
}

// A message that comes back to the queue by a nack, a recovery or a requeue of dead letters
// is announced as a push is: a pending pop takes it without its (hour-long) re-check.
TEST(AsyncPop, NackRecoveryAndRequeueDeadEndAPendingPop) {
    notice_only s;
    connection_pool other_pool{s.server.endpoint()};
    reliable_queue other{other_pool,
                         "jobs",
                         {.consumer_id = "other",
                          .visibility_timeout = 60s,
                          .heartbeat_interval = 30s,
                          .recover_interval = 0ms,
                          .recover_on_start = false}};
    const auto pending_pop = [&] {
        auto f = async_pop(s.q, 120s, asio::use_future);
        // Settled into its wait (its link confirmed and the queue found empty).
        EXPECT_EQ(f.wait_for(1s), std::future_status::timeout);
        return f;
    };
    const auto taken = [&](std::future<std::optional<delivery>>& f, const std::string& id) {
        ASSERT_EQ(f.wait_for(30s), std::future_status::ready) << "no notice ended the wait";
        const auto d = f.get();
        ASSERT_TRUE(d);
        EXPECT_EQ(d->id, id);
        EXPECT_TRUE(s.q.ack(*d));
    };
    // A nack (requeue).
    const auto a = other.push("a");
    auto held = other.pop(1s);
    ASSERT_TRUE(held);
    auto f = pending_pop();
    ASSERT_TRUE(other.nack(*held, nack_action::requeue));
    taken(f, a);
    // A recovery of a consumer whose lease is gone.
    const auto b = other.push("b");
    held = other.pop(1s);
    ASSERT_TRUE(held);
    ASSERT_EQ(s.server.command({"DEL", other.key() + ":heartbeat:other"}).integer(), 1);
    f = pending_pop();
    EXPECT_EQ(other.recover().requeued, 1u);
    taken(f, b);
    // A requeue of dead letters.
    const auto c = other.push("c");
    held = other.pop(1s);
    ASSERT_TRUE(held);
    ASSERT_TRUE(other.nack(*held, nack_action::dead_letter));
    f = pending_pop();
    EXPECT_EQ(other.requeue_dead(), 1u);
    taken(f, c);
}

// A deadline still ends a pop whose re-check is far away.
TEST(AsyncPop, TheDeadlineEndsAPopWaitingForANotice) {
    notice_only s;
    auto f = async_pop(s.q, 300ms, asio::use_future);
    ASSERT_EQ(f.wait_for(60s), std::future_status::ready);
    EXPECT_FALSE(f.get().has_value());
}

TEST(AsyncPop, AsyncPopRecheckMustBePositive) {
    local_server server;
    connection_pool pool{server.endpoint()};
    EXPECT_THROW(reliable_queue(pool, "jobs", {.async_pop_recheck = 0ms}), invalid_argument);
}
