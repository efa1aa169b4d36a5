// async_wait and async_arrive_and_wait (redcoord/signaling/async.hpp) against real
// redis-server processes: callbacks, futures, coroutines on the caller's io_context, timeouts,
// cancellation that leaves nothing behind, and typed errors.

#include <redcoord/core/errors.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/signaling/async.hpp>
#include <redcoord/signaling/barrier.hpp>
#include <redcoord/signaling/latch.hpp>
#include <redcoord/signaling/signal_hub.hpp>
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
#include <future>
#include <mutex>
#include <thread>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::eventually;
using redcoord::testing::local_server;
namespace asio = boost::asio;

namespace {

struct one_server : redcoord::testing::runtime_server {
    signal_hub hub{pool};
};

// The runtime on the test's own io_context: the test's thread runs the event loop.
struct on_the_callers_loop {
    local_server server;
    asio::io_context io;
    std::shared_ptr<runtime> rt = runtime::create(io);
    connection_pool pool{server.endpoint(), {}, rt};
    signal_hub hub{pool};
};

using wait_result = std::pair<std::exception_ptr, std::optional<redcoord::signal>>;

std::int64_t subscribers(local_server& s, const std::string& channel) {
    return s.command({"PUBSUB", "NUMSUB", channel}).elements().at(1).integer();
}

// A signal broadcast on "ch" now is returned by `w`'s next (blocking) wait.
void expect_the_next_signal_reaches(signal_hub& hub, waiter& w) {
    hub.broadcast("ch", "next");
    auto sig = w.wait(10s);
    ASSERT_TRUE(sig);
    EXPECT_EQ(sig->payload, "next");
}

}  // namespace

// ---- async_wait ----

TEST(AsyncWait, CallbackGetsTheNextSignal) {
    one_server s;
    auto w = s.hub.listen({"ch"});
    std::promise<wait_result> done;
    async_wait(w, 20s, [&](std::exception_ptr e, std::optional<redcoord::signal> sig) {
        done.set_value({e, std::move(sig)});
    });
    auto f = done.get_future();
    EXPECT_EQ(f.wait_for(200ms), std::future_status::timeout);  // nothing sent yet
    EXPECT_EQ(s.hub.broadcast("ch", "hello"), 1u);
    ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
    auto [e, sig] = f.get();
    ASSERT_FALSE(e);
    ASSERT_TRUE(sig);
    EXPECT_EQ(sig->channel, "ch");
    EXPECT_EQ(sig->payload, "hello");
    EXPECT_FALSE(w.try_wait());  // returned once
}

TEST(AsyncWait, ASignalAlreadyQueuedCompletesAtOnce) {
    one_server s;
    auto w = s.hub.listen({"ch"});
    s.hub.broadcast("ch", "early");
    ASSERT_TRUE(eventually([&] { return w.pending() == 1; }, 5s));
    auto sig = async_wait(w, 0ms, asio::use_future).get();
    ASSERT_TRUE(sig);
    EXPECT_EQ(sig->payload, "early");
}

TEST(AsyncWait, FutureTimesOutWithNothing) {
    one_server s;
    auto w = s.hub.listen({"ch"});
    auto f = async_wait(w, 200ms, asio::use_future);
    ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
    EXPECT_FALSE(f.get());
    // The timed-out wait took nothing: the next signal is there for the next wait.
    expect_the_next_signal_reaches(s.hub, w);
}

TEST(AsyncWait, CoroutineOnTheCallersIoContextRunsWithoutARuntimeThread) {
    on_the_callers_loop s;
    auto& io = s.io;
    auto& hub = s.hub;
    auto w = hub.listen({"a", "b"});
    std::vector<std::string> got;
    std::atomic<std::size_t> taken{0};
    std::atomic<bool> late{false};
    std::thread sender([&] {
        // Each signal after the coroutine took the previous one: the waits really wait, and
        // the signal (not the 60 s timer) ends them.
        for (const char* p : {"one", "two"}) {
            const auto before = taken.load();
            hub.broadcast("a", p);
            if (!eventually([&] { return taken.load() > before; }, 10s)) late = true;
        }
    });
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            for (int i = 0; i < 2; ++i) {
                auto sig = co_await async_wait(w, 60s, asio::use_awaitable);
                got.push_back(sig ? sig->payload : "timeout");
                ++taken;
            }
            auto none = co_await async_wait(w, 100ms, asio::use_awaitable);
            got.push_back(none ? none->payload : "timeout");
        },
        asio::detached);
    io.run();  // the test's thread is the event loop
    sender.join();
    EXPECT_FALSE(late) << "a signal did not end its wait";
    EXPECT_EQ(got, (std::vector<std::string>{"one", "two", "timeout"}));
}

TEST(AsyncWait, CancellationMidWaitEndsAtOnceAndTakesNothing) {
    one_server s;
    auto w = s.hub.listen({"ch"});
    asio::cancellation_signal cancel;
    std::promise<wait_result> done;
    async_wait(w, 30s,
               asio::bind_cancellation_slot(
                   cancel.slot(), [&](std::exception_ptr e, std::optional<redcoord::signal> sig) {
                       done.set_value({e, std::move(sig)});
                   }));
    std::this_thread::sleep_for(100ms);
    asio::post(s.rt->io(), [&] { cancel.emit(asio::cancellation_type::terminal); });
    auto f = done.get_future();
    ASSERT_EQ(f.wait_for(5s), std::future_status::ready) << "the cancelled wait did not end";
    auto [e, sig] = f.get();
    EXPECT_TRUE(redcoord::testing::is_operation_aborted(e));
    EXPECT_FALSE(sig);
    // The cancelled operation no longer listens: the next signal stays for the waiter.
    expect_the_next_signal_reaches(s.hub, w);
}

TEST(AsyncWait, ADestroyedHubEndsTheWaitWithNothing) {
    local_server server;
    auto rt = runtime::create();
    connection_pool pool(server.endpoint(), {}, rt);
    auto hub = std::make_unique<signal_hub>(pool);
    auto w = hub->listen({"ch"});
    auto f = async_wait(w, 30s, asio::use_future);
    std::this_thread::sleep_for(100ms);
    hub.reset();
    ASSERT_EQ(f.wait_for(5s), std::future_status::ready);
    EXPECT_FALSE(f.get());
}

TEST(AsyncWait, AnEmptyWaiterOrANegativeTimeoutIsRefused) {
    one_server s;
    auto w = s.hub.listen({"ch"});
    EXPECT_THROW((void)async_wait(w, -1ms, asio::use_future), invalid_argument);
    auto moved = std::move(w);
    EXPECT_THROW((void)async_wait(w, 10ms, asio::use_future), invalid_argument);  // NOLINT
}

// ---- async_arrive_and_wait ----

TEST(AsyncBarrier, CallbackAndFuturePassTheSameGeneration) {
    one_server s;
    barrier a(s.hub, "b", 2), b(s.hub, "b", 2);
    std::promise<std::pair<std::exception_ptr, std::optional<std::uint64_t>>> first;
    async_arrive_and_wait(a, 20s, [&](std::exception_ptr e, std::optional<std::uint64_t> g) {
        first.set_value({e, g});
    });
    auto f1 = first.get_future();
    EXPECT_EQ(f1.wait_for(300ms), std::future_status::timeout);  // one of two: waits
    ASSERT_TRUE(eventually([&] { return a.arrived() == 1; }, 5s));
    auto f2 = async_arrive_and_wait(b, 20s, asio::use_future);
    ASSERT_EQ(f1.wait_for(10s), std::future_status::ready);
    auto [e, g] = f1.get();
    ASSERT_FALSE(e);
    ASSERT_TRUE(g);
    EXPECT_EQ(*g, 0u);
    EXPECT_EQ(f2.get(), std::optional<std::uint64_t>(0));
    EXPECT_EQ(a.generation(), 1u);
}

TEST(AsyncBarrier, TheLastArrivalWakesAWaitingPartyBeforeItsNextRefresh) {
    one_server s;
    // A refresh every 20 s: a pass within 10 s can only come from the channel's wake-up.
    const barrier_options slow{.arrival_lease = 60s};
    barrier a(s.hub, "b", 2, slow), b(s.hub, "b", 2, slow);
    auto first = async_arrive_and_wait(a, 60s, asio::use_future);
    ASSERT_TRUE(eventually([&] { return a.arrived() == 1; }, 5s));
    std::this_thread::sleep_for(100ms);  // it has read the state and waits
    EXPECT_EQ(b.arrive_and_wait(10s), 0u);
    ASSERT_EQ(first.wait_for(10s), std::future_status::ready) << "woken only by its refresh";
    EXPECT_EQ(first.get(), std::optional<std::uint64_t>(0));
}

TEST(AsyncBarrier, AWakeThatComesBeforeTheArrivalsReplyIsNotLost) {
    // The last arrival's signal and the reply to an earlier party's script travel on two
    // sockets: the signal may come first. With a refresh every 20 s, only the wake can pass a
    // party within its 15 s timeout, round after round.
    one_server s;
    const barrier_options slow{.arrival_lease = 60s};
    constexpr int parties = 3, rounds = 15;
    std::vector<std::unique_ptr<barrier>> members;
    for (int i = 0; i < parties; ++i)
        members.push_back(std::make_unique<barrier>(s.hub, "b", parties, slow));
    std::vector<std::vector<std::optional<std::uint64_t>>> passed(parties);
    std::vector<std::thread> threads;
    for (int i = 0; i < parties; ++i)
        threads.emplace_back([&, i] {
            for (int r = 0; r < rounds; ++r) {
                auto g = async_arrive_and_wait(*members[i], 15s, asio::use_future).get();
                passed[i].push_back(g);
                if (!g) return;
            }
        });
    for (auto& t : threads) t.join();
    for (int i = 0; i < parties; ++i) {
        ASSERT_EQ(passed[i].size(), static_cast<std::size_t>(rounds)) << "party " << i;
        for (int r = 0; r < rounds; ++r)
            EXPECT_EQ(passed[i][r], std::optional<std::uint64_t>(r)) << "party " << i;
    }
}

TEST(AsyncBarrier, CoroutinesOnTheCallersIoContextPassWithABlockingParty) {
    on_the_callers_loop s;
    auto& io = s.io;
    auto& hub = s.hub;
    barrier a(hub, "b", 3), b(hub, "b", 3), blocking(hub, "b", 3);
    std::mutex mu;  // the coroutines' thread and the blocking party's both record
    std::vector<std::uint64_t> passed;
    auto record = [&](std::uint64_t g) {
        std::lock_guard l(mu);
        passed.push_back(g);
    };
    for (auto* x : {&a, &b})
        asio::co_spawn(
            io,
            [&, x]() -> asio::awaitable<void> {
                for (int round = 0; round < 2; ++round) {
                    auto g = co_await async_arrive_and_wait(*x, 20s, asio::use_awaitable);
                    record(g ? *g : 99);
                }
            },
            asio::detached);
    std::thread other([&] {
        for (int round = 0; round < 2; ++round) record(blocking.arrive_and_wait(20s));
    });
    io.run();
    other.join();
    std::sort(passed.begin(), passed.end());
    EXPECT_EQ(passed, (std::vector<std::uint64_t>{0, 0, 0, 1, 1, 1}));
}

TEST(AsyncBarrier, ATimeoutCompletesWithNothingAndWithdrawsTheArrival) {
    one_server s;
    barrier a(s.hub, "b", 2);
    auto f = async_arrive_and_wait(a, 300ms, asio::use_future);
    ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
    EXPECT_FALSE(f.get());
    EXPECT_EQ(a.arrived(), 0u);
}

TEST(AsyncBarrier, CancellationMidWaitEndsAtOnceAndLeavesNoArrivalAndNoSubscription) {
    one_server s;
    auto b = std::make_unique<barrier>(s.hub, "b", 2);
    const std::string channel = "redcoord:barrier:{b}";
    asio::cancellation_signal cancel;
    std::promise<std::pair<std::exception_ptr, std::optional<std::uint64_t>>> done;
    async_arrive_and_wait(
        *b, 30s,
        asio::bind_cancellation_slot(cancel.slot(),
                                     [&](std::exception_ptr e, std::optional<std::uint64_t> g) {
                                         done.set_value({e, g});
                                     }));
    ASSERT_TRUE(eventually([&] { return b->arrived() == 1; }, 5s));
    EXPECT_EQ(subscribers(s.server, channel), 1);
    asio::post(s.rt->io(), [&] { cancel.emit(asio::cancellation_type::terminal); });
    auto f = done.get_future();
    ASSERT_EQ(f.wait_for(5s), std::future_status::ready) << "the cancelled wait did not end";
    auto [e, g] = f.get();
    EXPECT_TRUE(redcoord::testing::is_operation_aborted(e));
    EXPECT_FALSE(g);
    EXPECT_EQ(b->arrived(), 0u);  // withdrawn
    // The object keeps its channel between rounds; once it is gone nothing listens for it.
    b.reset();
    EXPECT_TRUE(eventually([&] { return subscribers(s.server, channel) == 0; }, 5s))
        << "the cancelled operation left a subscription behind";
}

TEST(AsyncBarrier, CancellationWhileTheArrivalIsInFlightLeavesNoArrival) {
    one_server s;
    barrier b(s.hub, "b", 2);
    ASSERT_FALSE(async_arrive_and_wait(b, 0ms, asio::use_future).get());  // subscribed now
    for (int i = 0; i < 20; ++i) {
        asio::cancellation_signal cancel;
        std::promise<std::exception_ptr> done;
        async_arrive_and_wait(
            b, 30s,
            asio::bind_cancellation_slot(
                cancel.slot(),
                [&](std::exception_ptr e, std::optional<std::uint64_t>) { done.set_value(e); }));
        // Lands while the arrival's script is on its way (the subscription is confirmed already).
        asio::post(s.rt->io(), [&] { cancel.emit(asio::cancellation_type::terminal); });
        auto f = done.get_future();
        ASSERT_EQ(f.wait_for(5s), std::future_status::ready);
        EXPECT_TRUE(redcoord::testing::is_operation_aborted(f.get()));
        ASSERT_EQ(b.arrived(), 0u) << "round " << i << " left its arrival counting";
    }
}

TEST(AsyncBarrier, ErrorsAreTypedAsTheBlockingArriveThrowsThem) {
    {
        one_server s;
        barrier three(s.hub, "b", 3), two(s.hub, "b", 2);
        auto f = async_arrive_and_wait(three, 20s, asio::use_future);
        ASSERT_TRUE(eventually([&] { return three.arrived() == 1; }, 5s));
        EXPECT_THROW((void)async_arrive_and_wait(two, 1s, asio::use_future).get(),
                     invalid_argument);
        EXPECT_FALSE(async_arrive_and_wait(three, 0ms, asio::use_future).get());
        (void)three.force_reset();
        EXPECT_THROW((void)f.get(), barrier_lease_lost);
    }
    {
        one_server s;
        barrier b(s.hub, "b", 2);
        EXPECT_THROW((void)async_arrive_and_wait(b, -1ms, asio::use_future), invalid_argument);
        s.server.kill();
        EXPECT_THROW((void)async_arrive_and_wait(b, 2s, asio::use_future).get(), connection_error);
    }
}

TEST(AsyncBarrier, ClusterEndpointsAreRefusedBeforeAnythingIsSent) {
    local_server server;
    auto ep = server.endpoint();
    ep.cluster_nodes.push_back({"127.0.0.1", server.endpoint().port});
    auto rt = runtime::create();
    connection_pool pool(ep, {}, rt);
    signal_hub hub(pool);
    barrier b(hub, "b", 2);
    EXPECT_THROW((void)async_arrive_and_wait(b, 1s, asio::use_future), invalid_argument);
}

// ---- async_wait of a latch ----

TEST(AsyncLatch, TheLastCountDownOpensAWaitingCallback) {
    one_server s;
    latch l(s.hub, "l", 2, {.recheck_interval = 30s});  // only the notice can end the wait soon
    std::promise<std::pair<std::exception_ptr, std::optional<bool>>> done;
    async_wait(l, 20s, [&](std::exception_ptr e, std::optional<bool> open) {
        done.set_value({e, open});
    });
    auto f = done.get_future();
    EXPECT_EQ(l.count_down(), 1u);
    EXPECT_EQ(f.wait_for(300ms), std::future_status::timeout);  // still closed
    latch other(s.hub, "l", 2);
    EXPECT_EQ(other.count_down(), 0u);
    ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
    auto [e, open] = f.get();
    ASSERT_FALSE(e);
    EXPECT_EQ(open, std::optional<bool>(true));
}

TEST(AsyncLatch, FutureTimesOutWithNothingAndAnOpenLatchCompletesAtOnce) {
    one_server s;
    latch l(s.hub, "l", 1);
    EXPECT_FALSE(async_wait(l, 200ms, asio::use_future).get());
    EXPECT_FALSE(async_wait(l, 0ms, asio::use_future).get());
    (void)l.count_down();
    EXPECT_EQ(async_wait(l, 0ms, asio::use_future).get(), std::optional<bool>(true));
}

TEST(AsyncLatch, CoroutinesOnTheCallersIoContextOpenTogether) {
    on_the_callers_loop s;
    latch l(s.hub, "l", 1, {.recheck_interval = 30s});
    int opened = 0;
    for (int i = 0; i < 3; ++i)
        asio::co_spawn(
            s.io,
            [&]() -> asio::awaitable<void> {
                if (co_await async_wait(l, 60s, asio::use_awaitable)) ++opened;
            },
            asio::detached);
    std::thread opener([&] {
        std::this_thread::sleep_for(300ms);
        latch mine(s.hub, "l", 1);
        (void)mine.count_down();
    });
    s.io.run();
    opener.join();
    EXPECT_EQ(opened, 3);
}

TEST(AsyncLatch, CancellationMidWaitEndsAtOnce) {
    one_server s;
    latch l(s.hub, "l", 1);
    asio::cancellation_signal cancel;
    std::promise<std::exception_ptr> done;
    async_wait(
        l, 30s,
        asio::bind_cancellation_slot(
            cancel.slot(), [&](std::exception_ptr e, std::optional<bool>) { done.set_value(e); }));
    std::this_thread::sleep_for(150ms);
    asio::post(s.rt->io(), [&] { cancel.emit(asio::cancellation_type::terminal); });
    auto f = done.get_future();
    ASSERT_EQ(f.wait_for(5s), std::future_status::ready) << "the cancelled wait did not end";
    EXPECT_TRUE(redcoord::testing::is_operation_aborted(f.get()));
    EXPECT_EQ(l.count(), 1u);
}

TEST(AsyncLatch, ErrorsAreTypedAsTheBlockingWaitThrowsThem) {
    one_server s;
    latch l(s.hub, "l", 1);
    EXPECT_THROW((void)async_wait(l, -1ms, asio::use_future), invalid_argument);
    s.server.kill();
    EXPECT_THROW((void)async_wait(l, 2s, asio::use_future).get(), connection_error);
}
