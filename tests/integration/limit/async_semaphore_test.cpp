// async_acquire(semaphore&, ...) (redcoord/limit/async.hpp) against real redis-server
// processes: a callback, a future, a coroutine on the caller's io_context, waits woken by
// releases (not polling), timeouts and cancellation that leave no permit and no waiter or
// queue entry, and the fifo option's order.

#include <redcoord/core/errors.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/limit/async.hpp>
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

#include <gtest/gtest.h>

#include <future>
#include <thread>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::eventually;
using redcoord::testing::local_server;
namespace asio = boost::asio;

namespace {

struct one_server : redcoord::testing::runtime_server {
    std::int64_t held(const std::string& name) {
        return server.command({"ZCARD", make_key(default_prefix, "semaphore", name)}).integer();
    }
    bool waiters_left(const std::string& name) {
        return server
                   .command({"EXISTS", make_key(default_prefix, "semaphore", name, "waiting"),
                             make_key(default_prefix, "semaphore", name, "queue")})
                   .integer() != 0;
    }
};

}  // namespace

TEST(AsyncSemaphore, CallbackAcquiresFreePermits) {
    one_server s;
    semaphore sem(s.pool, "slots", {.permits = 3, .timing = {.ttl = 10s}});
    std::promise<std::pair<std::exception_ptr, std::optional<permit>>> done;
    async_acquire(sem, 2, 0ms, [&](std::exception_ptr e, std::optional<permit> p) {
        done.set_value({e, std::move(p)});
    });
    auto [e, p] = done.get_future().get();
    ASSERT_FALSE(e);
    ASSERT_TRUE(p);
    EXPECT_TRUE(p->held());
    EXPECT_EQ(p->count(), 2u);
    EXPECT_GT(p->fencing_token(), 0u);
    EXPECT_EQ(s.held("slots"), 2);
    EXPECT_TRUE(p->release());
    EXPECT_EQ(s.held("slots"), 0);
}

TEST(AsyncSemaphore, FutureIsWokenByAReleaseNotByPolling) {
    one_server s;
    // Retry interval and TTL far beyond the test's patience: only the release notice wakes it.
    semaphore sem(s.pool, "one", {.permits = 1, .timing = {.ttl = 60s, .max_retry_interval = 30s}});
    auto holder = sem.try_acquire();
    ASSERT_TRUE(holder);
    auto waiting = async_acquire(sem, 1, 60s, asio::use_future);
    std::this_thread::sleep_for(300ms);  // it has attempted and sleeps
    ASSERT_EQ(waiting.wait_for(0s), std::future_status::timeout);
    EXPECT_TRUE(holder->release());
    ASSERT_EQ(waiting.wait_for(10s), std::future_status::ready) << "the release did not wake it";
    auto p = waiting.get();
    ASSERT_TRUE(p);
    EXPECT_TRUE(p->held());
}

TEST(AsyncSemaphore, CoroutineOnTheCallersIoContext) {
    local_server server;
    asio::io_context io;
    auto rt = runtime::create(io);
    connection_pool pool(server.endpoint(), {}, rt);
    semaphore sem(pool, "co", {.permits = 3, .timing = {.ttl = 10s}});
    std::vector<std::string> events;
    std::thread releaser;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            auto two = co_await async_acquire(sem, 2, 0ms, asio::use_awaitable);
            events.push_back(two ? "two acquired" : "two refused");
            auto again = co_await async_acquire(sem, 2, 0ms, asio::use_awaitable);
            events.push_back(again ? "again acquired" : "again refused");
            // The release goes over the blocking pool from a helper thread: the loop's thread
            // must not block. Joined before what it releases goes.
            releaser = std::thread([held = std::move(two)]() mutable { held->release(); });
            auto later = co_await async_acquire(sem, 2, 10s, asio::use_awaitable);
            events.push_back(later ? "later acquired" : "later refused");
        },
        asio::detached);
    io.run();
    if (releaser.joinable()) releaser.join();
    EXPECT_EQ(events,
              (std::vector<std::string>{"two acquired", "again refused", "later acquired"}));
}

TEST(AsyncSemaphore, AWaitThatRunsOutCompletesWithNothingAndLeavesNoEntry) {
    one_server s;
    semaphore sem(s.pool, "full", {.permits = 1, .timing = {.ttl = 30s}, .fifo = true});
    auto holder = sem.try_acquire();
    ASSERT_TRUE(holder);
    const auto t0 = std::chrono::steady_clock::now();
    auto p = async_acquire(sem, 1, 300ms, asio::use_future).get();
    EXPECT_FALSE(p);
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 300ms);
    EXPECT_FALSE(s.waiters_left("full")) << "a waiter or queue entry was left behind";
    EXPECT_EQ(s.held("full"), 1);
}

TEST(AsyncSemaphore, CancellationMidWaitLeavesNoPermitAndNoWaiterOrQueueEntry) {
    one_server s;
    semaphore sem(s.pool, "cancel", {.permits = 1, .timing = {.ttl = 30s}, .fifo = true});
    auto holder = sem.try_acquire();
    ASSERT_TRUE(holder);
    asio::cancellation_signal cancel;
    std::promise<std::exception_ptr> done;
    async_acquire(sem, 1, 30s,
                  asio::bind_cancellation_slot(cancel.slot(),
                                               [&](std::exception_ptr e, std::optional<permit> p) {
                                                   EXPECT_FALSE(p);
                                                   done.set_value(e);
                                               }));
    ASSERT_TRUE(eventually([&] { return s.waiters_left("cancel"); }, 5s)) << "it never queued";
    asio::post(s.rt->io(), [&] { cancel.emit(asio::cancellation_type::terminal); });
    auto f = done.get_future();
    ASSERT_EQ(f.wait_for(5s), std::future_status::ready) << "the cancelled wait did not end";
    EXPECT_TRUE(redcoord::testing::is_operation_aborted(f.get()));
    // Withdrawn before the handler ran: nothing to wait for.
    EXPECT_FALSE(s.waiters_left("cancel")) << "a waiter or queue entry was left behind";
    EXPECT_TRUE(holder->release());
    std::this_thread::sleep_for(200ms);  // a late attempt would take the free permit now
    EXPECT_EQ(s.held("cancel"), 0);
}

TEST(AsyncSemaphore, FifoServesAsyncWaitersInArrivalOrderAndNoNewcomerBargesIn) {
    one_server s;
    semaphore sem(s.pool, "fifo", {.permits = 1, .timing = {.ttl = 30s}, .fifo = true});
    auto holder = sem.try_acquire();
    ASSERT_TRUE(holder);
    auto first = async_acquire(sem, 1, 30s, asio::use_future);
    ASSERT_TRUE(eventually(
        [&] {
            return s.server
                       .command({"LLEN", make_key(default_prefix, "semaphore", "fifo", "queue")})
                       .integer() == 1;
        },
        5s));
    auto second = async_acquire(sem, 1, 30s, asio::use_future);
    ASSERT_TRUE(eventually(
        [&] {
            return s.server
                       .command({"LLEN", make_key(default_prefix, "semaphore", "fifo", "queue")})
                       .integer() == 2;
        },
        5s));
    EXPECT_TRUE(holder->release());
    ASSERT_EQ(first.wait_for(10s), std::future_status::ready);
    auto p1 = first.get();
    ASSERT_TRUE(p1);
    EXPECT_EQ(second.wait_for(300ms), std::future_status::timeout);
    p1->release();
    EXPECT_FALSE(sem.try_acquire()) << "a newcomer took the queued waiter's permit";
    ASSERT_EQ(second.wait_for(10s), std::future_status::ready);
    EXPECT_TRUE(second.get());
}

TEST(AsyncSemaphore, BadCallsAreRefusedBeforeAnythingIsSent) {
    one_server s;
    semaphore sem(s.pool, "bad", {.permits = 2});
    EXPECT_THROW(async_acquire(sem, 0, 0ms, asio::use_future), invalid_argument);
    EXPECT_THROW(async_acquire(sem, 3, 0ms, asio::use_future), invalid_argument);
    EXPECT_THROW(async_acquire(sem, 1, -1ms, asio::use_future), invalid_argument);
    semaphore replicated(s.pool, "rep", {.permits = 2, .replication = {.replicas = 1}});
    EXPECT_THROW(async_acquire(replicated, 1, 0ms, asio::use_future), invalid_argument);
    EXPECT_EQ(s.held("bad"), 0);
}

TEST(AsyncSemaphore, AsyncReleaseFreesThePermitsAndWakesAWaiter) {
    one_server s;
    semaphore sem(s.pool, "rel", {.permits = 2, .timing = {.ttl = 60s, .max_retry_interval = 30s}});
    auto two = async_acquire(sem, 2, 0ms, asio::use_future).get();
    ASSERT_TRUE(two);
    auto waiting = async_acquire(sem, 1, 60s, asio::use_future);
    std::this_thread::sleep_for(300ms);  // it has attempted and sleeps
    auto released = async_release(*two, asio::use_future);
    EXPECT_FALSE(two->held());  // taken by the initiation itself
    const auto r = released.get();
    ASSERT_TRUE(r.has_value());
    EXPECT_TRUE(*r);
    ASSERT_EQ(waiting.wait_for(10s), std::future_status::ready) << "the release did not wake it";
    auto one = waiting.get();
    ASSERT_TRUE(one);
    EXPECT_EQ(s.held("rel"), 1);
    // Released before: nothing is sent.
    EXPECT_FALSE(async_release(*two, asio::use_future).get().has_value());
    permit empty;
    EXPECT_THROW(async_release(empty, asio::use_future), invalid_argument);
}
