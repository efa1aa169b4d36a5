#include <redcoord/core/connection.hpp>
#include <redcoord/core/detail/serial_executor.hpp>
#include <redcoord/core/detail/subscriber_access.hpp>
#include <redcoord/core/detail/timer_service.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/core/sentinel.hpp>
#include <redcoord/core/subscriber.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

using namespace redcoord;
using namespace std::chrono_literals;
using redcoord::testing::local_server;

namespace {
struct inbox {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<pubsub_message> got;
    std::vector<bool> states;
    void push(const pubsub_message& m) {
        std::lock_guard lk(mu);
        got.push_back(m);
        cv.notify_all();
    }
    bool wait_count(std::size_t n, std::chrono::milliseconds t = 3000ms) {
        std::unique_lock lk(mu);
        return cv.wait_for(lk, t, [&] { return got.size() >= n; });
    }
};
}  // namespace

TEST(Subscriber, ReceivesBinaryMessagesAfterConfirmation) {
    local_server srv;
    inbox in;
    subscriber sub(srv.endpoint(), [&](const pubsub_message& m) { in.push(m); });
    ASSERT_TRUE(sub.subscribe({"ch"}, 3000ms));
    std::string payload("x\0y\r\n", 5);
    EXPECT_EQ(srv.command({"PUBLISH", "ch", payload}).integer(), 1);
    ASSERT_TRUE(in.wait_count(1));
    EXPECT_EQ(in.got[0].channel, "ch");
    EXPECT_EQ(in.got[0].payload, payload);
    EXPECT_TRUE(in.got[0].pattern.empty());
}

TEST(Subscriber, PatternsAndUnsubscribe) {
    local_server srv;
    inbox in;
    subscriber sub(srv.endpoint(), [&](const pubsub_message& m) { in.push(m); });
    ASSERT_TRUE(sub.psubscribe({"job.*"}, 3000ms));
    ASSERT_TRUE(sub.subscribe({"a", "b"}, 3000ms));
    srv.command({"PUBLISH", "job.7", "p"});
    ASSERT_TRUE(in.wait_count(1));
    EXPECT_EQ(in.got[0].pattern, "job.*");
    EXPECT_EQ(in.got[0].channel, "job.7");
    sub.unsubscribe({"a"});
    // Wait until the server has dropped the subscription.
    for (int i = 0; i < 300 && srv.command({"PUBSUB", "NUMSUB", "a"}).elements()[1].integer() != 0;
         ++i)
        std::this_thread::sleep_for(10ms);
    EXPECT_EQ(srv.command({"PUBLISH", "a", "x"}).integer(), 0);
    EXPECT_EQ(srv.command({"PUBLISH", "b", "y"}).integer(), 1);
    ASSERT_TRUE(in.wait_count(2));
    EXPECT_EQ(in.got[1].payload, "y");
}

TEST(Subscriber, ResubscribesAfterTheLinkIsKilled) {
    local_server srv;
    inbox in;
    std::atomic<int> ups{0}, downs{0};
    subscriber sub(
        srv.endpoint(), [&](const pubsub_message& m) { in.push(m); }, {},
        [&](bool up) { (up ? ups : downs) += 1; });
    ASSERT_TRUE(sub.subscribe({"c1"}, 3000ms));
    ASSERT_TRUE(sub.psubscribe({"p.*"}, 3000ms));
    // A down is reported only for a link announced up, which the reader does on its next tick
    // after the confirmations: a kill before that would be no state change at all.
    ASSERT_TRUE(redcoord::testing::eventually([&] { return ups.load() >= 1; }, 3s, 5ms));
    srv.command({"CLIENT", "KILL", "TYPE", "pubsub"});
    // Wait for the reader to come back and resubscribe both.
    ASSERT_TRUE(redcoord::testing::eventually(
        [&] { return sub.connects() >= 2 && sub.connected(); }, 3s, 10ms));
    EXPECT_GE(downs.load(), 1);
    EXPECT_EQ(srv.command({"PUBLISH", "c1", "again"}).integer(), 1);
    EXPECT_EQ(srv.command({"PUBLISH", "p.x", "again"}).integer(), 1);
    ASSERT_TRUE(in.wait_count(2));
}

TEST(Subscriber, SurvivesServerRestartAndSubscribesWhileDown) {
    local_server srv;
    inbox in;
    subscriber sub(srv.endpoint(), [&](const pubsub_message& m) { in.push(m); });
    ASSERT_TRUE(sub.subscribe({"c"}, 3000ms));
    srv.kill();
    EXPECT_FALSE(sub.subscribe({"d"}, 100ms));
    srv.restart();
    ASSERT_TRUE(sub.subscribe({"d"}, 5000ms));
    ASSERT_TRUE(sub.subscribe({"c"}, 5000ms));
    srv.command({"PUBLISH", "d", "1"});
    ASSERT_TRUE(in.wait_count(1));
}

TEST(Subscriber, NoticesAPausedServerAndRecovers) {
    local_server srv;
    inbox in;
    std::atomic<int> downs{0};
    subscriber sub(
        srv.endpoint(), [&](const pubsub_message& m) { in.push(m); }, {.health_interval = 100ms},
        [&](bool up) { downs += up ? 0 : 1; });
    ASSERT_TRUE(sub.subscribe({"c"}, 3000ms));
    srv.pause();
    for (int i = 0; i < 200 && downs.load() == 0; ++i) std::this_thread::sleep_for(10ms);
    EXPECT_GE(downs.load(), 1);
    srv.resume();
    ASSERT_TRUE(sub.subscribe({"c"}, 5000ms));
    srv.command({"PUBLISH", "c", "1"});
    ASSERT_TRUE(in.wait_count(1));
}

TEST(Subscriber, ThrowingHandlerIsNotFatal) {
    local_server srv;
    inbox in;
    subscriber sub(srv.endpoint(), [&](const pubsub_message& m) {
        if (m.payload == "boom") throw std::runtime_error("boom");
        in.push(m);
    });
    ASSERT_TRUE(sub.subscribe({"c"}, 3000ms));
    srv.command({"PUBLISH", "c", "boom"});
    srv.command({"PUBLISH", "c", "fine"});
    ASSERT_TRUE(in.wait_count(1));
    EXPECT_EQ(in.got[0].payload, "fine");
}

TEST(Subscriber, DestructorDoesNotHangWhenServerIsGone) {
    auto port = redcoord::testing::free_port();
    endpoint e;
    e.port = port;
    auto t0 = std::chrono::steady_clock::now();
    {
        subscriber sub(e, [](const pubsub_message&) {});
        EXPECT_FALSE(sub.subscribe({"x"}, 50ms));
    }
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
}

TEST(Subscriber, HelpersAndTheReaderDeliverEachMessageOnceInOrder) {
    local_server srv;
    inbox in;
    std::atomic<int> in_handler{0}, overlaps{0};
    subscriber sub(srv.endpoint(), [&](const pubsub_message& m) {
        if (in_handler.fetch_add(1) != 0) ++overlaps;  // handlers must never run at once
        in.push(m);
        in_handler.fetch_sub(1);
    });
    ASSERT_TRUE(sub.subscribe({"seq"}, 3000ms));
    std::atomic<bool> stop{false};
    std::atomic<int> helped{0};
    std::vector<std::thread> helpers;
    for (int t = 0; t < 3; ++t)
        helpers.emplace_back([&] {
            while (!stop)
                if (detail::subscriber_access::help_read(sub)) ++helped;
        });
    constexpr int n = 2000;
    connection pub(srv.endpoint());
    for (int i = 0; i < n; ++i) pub.command({"PUBLISH", "seq", std::to_string(i)});
    ASSERT_TRUE(in.wait_count(n));
    stop = true;
    for (auto& h : helpers) h.join();
    EXPECT_EQ(overlaps.load(), 0);
    EXPECT_GT(helped.load(), 0);  // the helpers did read some of them
    std::lock_guard lk(in.mu);
    ASSERT_EQ(in.got.size(), static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i)
        EXPECT_EQ(in.got[static_cast<std::size_t>(i)].payload, std::to_string(i));
}

TEST(Subscriber, AHelperMeetingADeadLinkLeavesTheReconnectToTheReader) {
    local_server srv;
    inbox in;
    subscriber sub(srv.endpoint(), [&](const pubsub_message& m) { in.push(m); });
    ASSERT_TRUE(sub.subscribe({"ch"}, 3000ms));
    const auto before = sub.connects();
    srv.command({"CLIENT", "KILL", "TYPE", "pubsub"});
    // Helpers may be the first to read the EOF; the reader still reconnects and resubscribes.
    for (int i = 0; i < 300 && sub.connects() == before; ++i) {
        (void)detail::subscriber_access::help_read(sub);
        std::this_thread::sleep_for(5ms);
    }
    EXPECT_GT(sub.connects(), before);
    ASSERT_TRUE(sub.subscribe({"ch"}, 3000ms));
    EXPECT_EQ(srv.command({"PUBLISH", "ch", "again"}).integer(), 1);
    ASSERT_TRUE(in.wait_count(1));
    EXPECT_EQ(in.got.back().payload, "again");
}

// drain_interval > 0: nobody reads on the reader thread while nothing asks for prompt
// delivery, helpers get everything in order, and a raised demand makes the reader watch.
TEST(Subscriber, LazyReaderLeavesMessagesToHelpersUntilDemandIsRaised) {
    local_server srv;
    inbox in;
    std::atomic<int> by_reader{0};
    const auto test_thread = std::this_thread::get_id();
    subscriber_options o;
    o.health_interval = 0ms;            // no health ticks: the reader's only timer is the drain
    o.tuning.drain_interval = 60000ms;  // no drain within this test
    subscriber sub(
        srv.endpoint(),
        [&](const pubsub_message& m) {
            if (std::this_thread::get_id() != test_thread) ++by_reader;
            in.push(m);
        },
        o);
    ASSERT_TRUE(sub.subscribe({"lazy"}, 3000ms));
    connection pub(srv.endpoint());
    constexpr int n = 5;
    for (int i = 0; i < n; ++i) {
        EXPECT_EQ(pub.command({"PUBLISH", "lazy", std::to_string(i)}).integer(), 1);
        std::this_thread::sleep_for(50ms);
    }
    std::this_thread::sleep_for(200ms);
    // The reader may still have been watching for the first one (it watched while the
    // subscription was being confirmed); after that it leaves the socket alone.
    EXPECT_LE(by_reader.load(), 1);
    for (int i = 0; i < 300; ++i) {
        {
            std::lock_guard lk(in.mu);
            if (in.got.size() >= static_cast<std::size_t>(n)) break;
        }
        (void)detail::subscriber_access::help_read(sub);
        std::this_thread::sleep_for(1ms);
    }
    {
        std::lock_guard lk(in.mu);
        ASSERT_EQ(in.got.size(), static_cast<std::size_t>(n));
        for (int i = 0; i < n; ++i)
            EXPECT_EQ(in.got[static_cast<std::size_t>(i)].payload, std::to_string(i));
    }
    const int before = by_reader.load();
    detail::subscriber_access::adjust_demand(sub, 1);
    EXPECT_EQ(pub.command({"PUBLISH", "lazy", "watched"}).integer(), 1);
    ASSERT_TRUE(in.wait_count(n + 1));  // no helper: only the reader can have read it
    EXPECT_EQ(by_reader.load(), before + 1);
    EXPECT_EQ(in.got.back().payload, "watched");
    detail::subscriber_access::adjust_demand(sub, -1);
}

TEST(Subscriber, LazyReaderDrainsWithoutHelpersOrDemand) {
    local_server srv;
    inbox in;
    subscriber_options o;
    o.tuning.drain_interval = 10ms;
    subscriber sub(
        srv.endpoint(), [&](const pubsub_message& m) { in.push(m); }, o);
    ASSERT_TRUE(sub.subscribe({"drained"}, 3000ms));
    connection pub(srv.endpoint());
    constexpr int n = 500;
    for (int i = 0; i < n; ++i) pub.command({"PUBLISH", "drained", std::to_string(i)});
    ASSERT_TRUE(in.wait_count(n));
    std::lock_guard lk(in.mu);
    for (int i = 0; i < n; ++i)
        EXPECT_EQ(in.got[static_cast<std::size_t>(i)].payload, std::to_string(i));
}

TEST(Subscriber, NegativeDrainIntervalIsRejected) {
    subscriber_options o;
    o.tuning.drain_interval = -1ms;
    EXPECT_THROW(subscriber(
                     endpoint{}, [](const pubsub_message&) {}, o),
                 invalid_argument);
}

// C3: an error reply to SUBSCRIBE (here NOPERM: the ACL user may not access the channel) is
// recorded and surfaced, the waiter stops waiting at once, and the refused channel is no
// longer wanted, so the link counts as fully subscribed again.
TEST(Subscriber, C3_RefusedSubscriptionIsReportedNotAwaitedForever) {
    local_server s;
    ASSERT_TRUE(s.command({"ACL", "SETUSER", "c3", "reset", "on", ">pw", "~*", "resetchannels",
                           "&ok:*", "+@all"})
                    .is_status("OK"));
    endpoint ep = s.endpoint();
    ep.user = "c3";
    ep.password = "pw";
    inbox box;
    subscriber sub(ep, [&](const pubsub_message& m) { box.push(m); });
    ASSERT_TRUE(sub.subscribe({"ok:1"}, 3000ms));
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_FALSE(sub.subscribe({"forbidden"}, 3000ms));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 1500ms)
        << "waited for a confirmation that cannot come";
    EXPECT_NE(sub.last_error().find("NOPERM"), std::string::npos) << sub.last_error();
    EXPECT_TRUE(sub.connected());  // the refused channel is not wanted any more
    s.command({"PUBLISH", "ok:1", "still here"});
    ASSERT_TRUE(box.wait_count(1));
    EXPECT_EQ(box.got[0].payload, "still here");
}

// C5: a link the server kills right after the subscription (here CLIENT KILL TYPE pubsub in
// a loop, as an output-buffer limit or a proxy would) must back off, not reconnect every
// reconnect_min forever.
TEST(Subscriber, C5_LinkKilledRightAfterSubscribingBacksOff) {
    local_server s;
    inbox box;
    subscriber sub(
        s.endpoint(), [&](const pubsub_message& m) { box.push(m); },
        subscriber_options{.reconnect_min = 20ms, .reconnect_max = 1000ms});
    ASSERT_TRUE(sub.subscribe({"c5"}, 3000ms));
    const auto before = sub.connects();
    connection killer(s.endpoint());
    const auto until = std::chrono::steady_clock::now() + 1500ms;
    while (std::chrono::steady_clock::now() < until) {
        (void)killer.command({"CLIENT", "KILL", "TYPE", "pubsub"});
        std::this_thread::sleep_for(5ms);
    }
    const auto reconnects = sub.connects() - before;
    // Backing off from 20 ms (20, 40, ... 640, then 1000 ms, plus jitter) allows about 7 in
    // 1.5 s; resetting after each connect allowed about 50.
    EXPECT_LE(reconnects, 10u);
    EXPECT_GE(reconnects, 3u);
}

// C8: a wait of milliseconds::max() means "as long as it takes", not "already over".
TEST(Subscriber, C8_HugeWaitDoesNotOverflow) {
    local_server s;
    inbox box;
    subscriber sub(s.endpoint(), [&](const pubsub_message& m) { box.push(m); });
    EXPECT_TRUE(sub.subscribe({"c8"}, std::chrono::milliseconds::max()));
    EXPECT_TRUE(sub.psubscribe({"c8:*"}, std::chrono::milliseconds::max()));
}

using redcoord::testing::process_threads;

using redcoord::testing::threads_named;

namespace {

// True once exactly `n` threads carry `name`: a thread names itself as it starts, a moment
// after whatever made it.
bool named_soon(const std::string& name, std::size_t n) {
    return redcoord::testing::eventually([&] { return threads_named(name) == n; });
}

}  // namespace

// Issue 15: the subscribers of a process share one reader thread (before: one reader thread per
// subscriber), which stops with the last subscriber; their dials run on the runtime's tick
// workers (issue 35: before, a dialer thread of their own).
TEST(Subscriber, FiftySubscribersOnFiveEndpointsShareOneReader) {
    std::vector<std::unique_ptr<local_server>> servers;
    for (int i = 0; i < 5; ++i) servers.push_back(std::make_unique<local_server>());
    auto rt = runtime::create();
    std::vector<std::unique_ptr<subscriber>> subs;
    std::atomic<int> got{0};
    for (int i = 0; i < 50; ++i) {
        subs.push_back(std::make_unique<subscriber>(
            servers[i % 5]->endpoint(), [&](const pubsub_message&) { ++got; },
            subscriber_options{.runtime = rt}));
        ASSERT_TRUE(subs.back()->subscribe({"ch" + std::to_string(i)}, 3000ms));
    }
    EXPECT_EQ(threads_named("rc-pubsub-read"), 1u);
    EXPECT_EQ(threads_named("rc-pubsub-dial"), 0u) << "dials run on the tick workers";
    // The timer thread only watches due times (a tick worker dialed): it names itself as it
    // starts, which may come after the dial.
    EXPECT_TRUE(named_soon("rc-timer", 1u));
    for (int i = 0; i < 50; ++i)
        servers[i % 5]->command({"PUBLISH", "ch" + std::to_string(i), "x"});
    EXPECT_TRUE(redcoord::testing::eventually([&] { return got.load() == 50; }));
    subs.clear();
    EXPECT_TRUE(redcoord::testing::eventually([] { return threads_named("rc-pubsub-read") == 0; }))
        << "the reader outlived the last subscriber";
}

// A runtime owns its subscribers' reader: a second runtime's subscribers get their own, and the
// first's stops with its last subscriber while the second's goes on.
TEST(Subscriber, TwoRuntimesShareNoPubSubThread) {
    local_server server;
    auto first = runtime::create();
    auto second = runtime::create();
    std::atomic<int> got_first{0}, got_second{0};
    auto on_first = std::make_unique<subscriber>(
        server.endpoint(), [&](const pubsub_message&) { ++got_first; },
        subscriber_options{.runtime = first});
    ASSERT_TRUE(on_first->subscribe({"first"}, 3000ms));
    EXPECT_EQ(threads_named("rc-pubsub-read"), 1u);
    EXPECT_TRUE(named_soon("rc-timer", 1u));
    auto on_second = std::make_unique<subscriber>(
        server.endpoint(), [&](const pubsub_message&) { ++got_second; },
        subscriber_options{.runtime = second});
    ASSERT_TRUE(on_second->subscribe({"second"}, 3000ms));
    EXPECT_EQ(threads_named("rc-pubsub-read"), 2u)
        << "the second runtime's subscriber used the first's reader";
    EXPECT_TRUE(named_soon("rc-timer", 2u)) << "the second runtime dialed on the first's timers";
    // A third subscriber on the first runtime adds no thread.
    const auto with_two = process_threads();
    auto again = std::make_unique<subscriber>(
        server.endpoint(), [](const pubsub_message&) {}, subscriber_options{.runtime = first});
    ASSERT_TRUE(again->subscribe({"again"}, 3000ms));
    EXPECT_EQ(threads_named("rc-pubsub-read"), 2u);
    EXPECT_LE(process_threads(), with_two + first->stats().tick_workers);
    on_first.reset();
    again.reset();
    EXPECT_TRUE(redcoord::testing::eventually([] { return threads_named("rc-pubsub-read") == 1; }))
        << "the first runtime's reader outlived its last subscriber";
    server.command({"PUBLISH", "second", "x"});
    EXPECT_TRUE(redcoord::testing::eventually([&] { return got_second.load() == 1; }));
    EXPECT_EQ(got_first.load(), 0);
}

// Every thread a runtime starts carries a name (top -H, gdb, /proc/PID/task/*/comm): the
// pub/sub reader, the timer thread and a tick worker, a callback thread, the I/O thread.
TEST(Subscriber, RuntimeThreadsAreNamed) {
    local_server server;
    auto rt = runtime::create();
    const std::vector<std::string> names = {"rc-pubsub-read", "rc-timer", "rc-tick", "rc-callback",
                                            "rc-io"};
    for (const auto& n : names)
        EXPECT_EQ(threads_named(n), 0u) << n << " before the runtime started anything";
    subscriber sub(
        server.endpoint(), [](const pubsub_message&) {}, subscriber_options{.runtime = rt});
    ASSERT_TRUE(sub.subscribe({"named"}, 3000ms));
    std::atomic<int> ticked{0}, called{0};
    redcoord::detail::timer t(rt->timers(),
                              [&]() -> std::optional<redcoord::detail::timer::time_point> {
                                  ++ticked;
                                  return std::nullopt;
                              });
    t.arm(std::chrono::steady_clock::now());
    redcoord::detail::strand callbacks(rt->callbacks());
    callbacks.post([&] { ++called; });
    (void)rt->io();  // starts the runtime's own I/O thread
    ASSERT_TRUE(
        redcoord::testing::eventually([&] { return ticked.load() == 1 && called.load() == 1; }));
    // A thread names itself as it starts, which may come a moment after the call that made it.
    for (const auto& n : names)
        EXPECT_TRUE(redcoord::testing::eventually([&] { return threads_named(n) >= 1u; })) << n;
}

// Pools and subscribers of one runtime share one resolver per Sentinel service; another
// runtime has its own, and shared_sentinel_resolver() is the default runtime's.
TEST(Subscriber, EachRuntimeHasItsOwnSentinelResolver) {
    const auto service = parse_endpoint("redis-sentinel://127.0.0.1:1,127.0.0.1:2/svc");
    auto first = runtime::create();
    auto second = runtime::create();
    const auto a = first->sentinel(service);
    EXPECT_EQ(first->sentinel(service), a);
    const auto b = second->sentinel(service);
    EXPECT_NE(a, b);
    EXPECT_NE(shared_sentinel_resolver(service), a);
    EXPECT_EQ(shared_sentinel_resolver(service), runtime::shared()->sentinel(service));
    // Another service name, or other credentials, is another resolver.
    EXPECT_NE(first->sentinel(parse_endpoint("redis-sentinel://127.0.0.1:1,127.0.0.1:2/other")), a);
}

// The shared reader never waits for a server: while one subscriber's server is paused (its
// link goes silent, is dropped and redialled), another subscriber's messages still arrive
// at once.
TEST(Subscriber, APausedServerDoesNotDelayOtherSubscribers) {
    local_server a, b;
    inbox in_a, in_b;
    subscriber on_a(a.endpoint(), [&](const pubsub_message& m) { in_a.push(m); },
                    {.health_interval = 100ms});
    subscriber on_b(b.endpoint(), [&](const pubsub_message& m) { in_b.push(m); },
                    {.health_interval = 100ms});
    ASSERT_TRUE(on_a.subscribe({"a"}, 3000ms));
    ASSERT_TRUE(on_b.subscribe({"b"}, 3000ms));
    const auto connects_a = on_a.connects();
    a.pause();
    struct resume_on_exit {
        local_server& s;
        ~resume_on_exit() { s.resume(); }
    } resume{a};
    connection pub(b.endpoint());
    std::chrono::steady_clock::duration worst{};
    for (int i = 0; i < 15; ++i) {  // 1.5 s: several silences, drops and redials of `on_a`
        const auto t0 = std::chrono::steady_clock::now();
        EXPECT_EQ(pub.command({"PUBLISH", "b", std::to_string(i)}).integer(), 1);
        ASSERT_TRUE(in_b.wait_count(static_cast<std::size_t>(i + 1), 2000ms));
        worst = std::max(worst, std::chrono::steady_clock::now() - t0);
        std::this_thread::sleep_for(100ms);
    }
    EXPECT_FALSE(on_a.connected());
    EXPECT_LT(worst, 250ms) << "a message waited for the paused server's link";
    a.resume();
    ASSERT_TRUE(on_a.subscribe({"a"}, 5000ms));
    EXPECT_GT(on_a.connects(), connects_a);
    EXPECT_EQ(a.command({"PUBLISH", "a", "back"}).integer(), 1);
    ASSERT_TRUE(in_a.wait_count(1));
}

// After the destructor returns no handler of the subscriber runs: one running on the shared
// reader is waited for, and messages still arriving are not delivered.
TEST(Subscriber, DestructorWaitsForARunningHandlerAndNoneRunsAfterIt) {
    local_server srv;
    std::atomic<bool> in_handler{false}, destroyed{false};
    std::atomic<int> calls{0}, after{0};
    auto sub = std::make_unique<subscriber>(srv.endpoint(), [&](const pubsub_message&) {
        if (destroyed.load()) ++after;
        in_handler = true;
        if (calls.fetch_add(1) == 0) std::this_thread::sleep_for(200ms);
        in_handler = false;
    });
    ASSERT_TRUE(sub->subscribe({"flood"}, 3000ms));
    std::atomic<bool> stop{false};
    std::thread flood([&] {
        connection pub(srv.endpoint());
        while (!stop.load()) pub.command({"PUBLISH", "flood", "x"});
    });
    for (int i = 0; i < 300 && !in_handler.load(); ++i) std::this_thread::sleep_for(1ms);
    ASSERT_TRUE(in_handler.load());
    const auto t0 = std::chrono::steady_clock::now();
    sub.reset();
    destroyed = true;
    EXPECT_FALSE(in_handler.load()) << "the destructor returned while a handler ran";
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
    std::this_thread::sleep_for(100ms);
    stop = true;
    flood.join();
    EXPECT_EQ(after.load(), 0);
}

// Issue 35, item 6: the reconnect back-off is I/O timing on the steady clock, armed on the
// timer service's runtime clock. An advance of that clock must not turn every pending dial
// due at once for ever (a back-off in steady time compared with the advanced clock would be
// "past" on every tick: a spin of dials).
TEST(SubscriberClock, AnAdvancedRuntimeClockNeitherSpinsNorStopsTheReconnects) {
    auto rt = runtime::create();
    local_server srv;
    subscriber_options o;
    o.runtime = rt;
    o.reconnect_min = 300ms;
    o.reconnect_max = 300ms;
    subscriber sub(
        srv.endpoint(), [](const pubsub_message&) {}, o);
    ASSERT_TRUE(sub.subscribe({"clock"}, 3000ms));
    srv.kill();  // the link drops; every dial from now on is refused
    std::this_thread::sleep_for(400ms);
    const auto before = rt->stats().timer_ticks;
    rt->clock().advance(1h);
    std::this_thread::sleep_for(900ms);
    const auto ticks = rt->stats().timer_ticks - before;
    // About three dials in 900 ms at 300 ms apart (and at most one at once after the
    // advance); a spin runs thousands.
    EXPECT_LE(ticks, 12u) << "timer ticks in 900 ms after the advance";
    EXPECT_GE(ticks, 1u) << "the dials stopped";
    srv.restart();
    // connected(), not the state handler: a session that drops before the reader announced
    // it up is never announced (nor its drop), so counting announcements races the kill.
    EXPECT_TRUE(redcoord::testing::eventually([&] { return sub.connected(); }, 10s))
        << "the link did not come back";
}
