// async_acquire(fair_lock&, ...) (redcoord/lock/async.hpp) against real redis-server
// processes: a callback, a future woken by the hand-off (not by its lease refresh), FIFO order
// among async waiters, a dead waiter skipped, a coroutine on the caller's io_context, and
// timeouts and cancellation that leave no key, no queue entry and no waiter lease.

#include <redcoord/core/errors.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/lock/async.hpp>
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

#include <algorithm>
#include <future>
#include <thread>

// A namespace of its own: a unity batch compiles this file with others (tests/CMakeLists.txt).
namespace async_fair_lock_test {

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::eventually;
using redcoord::testing::local_server;
namespace asio = boost::asio;

namespace {

struct one_server : redcoord::testing::runtime_server {
    std::vector<std::string> queue_of(const fair_lock& l) {
        std::vector<std::string> out;
        const auto r = server.command({"LRANGE", l.key() + ":queue", "0", "-1"});
        for (const auto& e : r.elements()) out.push_back(e.text());
        return out;
    }
    bool lease_left(const fair_lock& l) {
        return server.command({"EXISTS", l.key() + ":waiter:" + l.waiter_id()}).integer() != 0;
    }
};

}  // namespace

TEST(AsyncFairLock, CallbackAcquiresAFreeLockAndTheObjectHoldsIt) {
    one_server s;
    fair_lock lock(s.pool, "res", {.timing = {.ttl = 10s}});
    std::promise<std::pair<std::exception_ptr, std::optional<lock_acquisition>>> done;
    async_acquire(lock, 0ms, [&](std::exception_ptr e, std::optional<lock_acquisition> a) {
        done.set_value({e, std::move(a)});
    });
    auto [e, a] = done.get_future().get();
    ASSERT_FALSE(e);
    ASSERT_TRUE(a);
    EXPECT_TRUE(lock.held());
    EXPECT_EQ(s.server.command({"GET", lock.key()}).text(), a->token);
    EXPECT_GT(a->fencing_token, 0u);
    EXPECT_TRUE(lock.release());
    EXPECT_TRUE(s.server.command({"GET", lock.key()}).is_nil());
}

TEST(AsyncFairLock, AWaiterIsWokenByTheHandOffNotByItsLeaseRefresh) {
    one_server s;
    fair_lock holder(s.pool, "wake", {.timing = {.ttl = 60s}});
    // Its attempts refresh its lease every 10 s: only the hand-off can wake it sooner.
    fair_lock waiter(s.pool, "wake", {.timing = {.ttl = 60s}, .waiter_lease = 30s});
    ASSERT_TRUE(holder.try_lock());
    auto got = async_acquire(waiter, 60s, asio::use_future);
    ASSERT_TRUE(eventually([&] { return s.queue_of(waiter).size() == 1; }, 5s));
    std::this_thread::sleep_for(200ms);  // subscribed and asleep
    holder.unlock();
    ASSERT_EQ(got.wait_for(5s), std::future_status::ready) << "the hand-off did not wake it";
    EXPECT_TRUE(got.get());
    EXPECT_TRUE(s.queue_of(waiter).empty());
    waiter.unlock();
}

TEST(AsyncFairLock, AsyncWaitersAreServedInArrivalOrderAndADeadOneIsSkipped) {
    one_server s;
    fair_lock holder(s.pool, "fifo", {.timing = {.ttl = 30s}});
    ASSERT_TRUE(holder.try_lock());
    // A waiter that died queued, at the head: no lease key, so the first attempt's check of
    // the head purges it.
    s.server.command({"RPUSH", holder.key() + ":queue", "ghost"});
    std::vector<std::unique_ptr<fair_lock>> locks;
    std::vector<std::future<std::optional<lock_acquisition>>> got;
    for (int i = 0; i < 3; ++i) {
        locks.push_back(
            std::make_unique<fair_lock>(s.pool, "fifo", fair_lock_options{.timing = {.ttl = 30s}}));
        got.push_back(async_acquire(*locks.back(), 30s, asio::use_future));
        // Each asks once the one before it is seen in the queue: a known order.
        ASSERT_TRUE(eventually(
            [&] {
                auto q = s.queue_of(holder);
                return std::count(q.begin(), q.end(), locks.back()->waiter_id()) == 1 &&
                       q.size() == std::size_t(i) + 1;
            },
            5s))
            << "waiter " << i << " did not queue behind the others (the dead one purged)";
    }
    holder.unlock();
    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(got[i].wait_for(10s), std::future_status::ready) << "waiter " << i;
        EXPECT_TRUE(got[i].get()) << "waiter " << i;
        for (int j = i + 1; j < 3; ++j)
            EXPECT_EQ(got[j].wait_for(0s), std::future_status::timeout)
                << "waiter " << j << " overtook waiter " << i;
        locks[i]->unlock();
    }
    EXPECT_TRUE(s.queue_of(holder).empty());
}

TEST(AsyncFairLock, CoroutineOnTheCallersIoContext) {
    local_server server;
    asio::io_context io;
    auto rt = runtime::create(io);
    connection_pool pool(server.endpoint(), {}, rt);
    fair_lock a(pool, "co", {.timing = {.ttl = 10s}});
    fair_lock b(pool, "co", {.timing = {.ttl = 10s}});
    std::vector<std::string> events;
    std::thread releaser;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            auto first = co_await async_acquire(a, 0ms, asio::use_awaitable);
            events.push_back(first ? "a acquired" : "a refused");
            auto second = co_await async_acquire(b, 0ms, asio::use_awaitable);
            events.push_back(second ? "b acquired" : "b refused");
            // The release goes over the blocking pool from a helper thread: the loop's thread
            // must not block. Joined before `a` goes: b may be granted while unlock() is still
            // returning on that thread.
            releaser = std::thread([&a] { a.unlock(); });
            auto third = co_await async_acquire(b, 10s, asio::use_awaitable);
            events.push_back(third ? "b acquired" : "b refused");
        },
        asio::detached);
    io.run();
    if (releaser.joinable()) releaser.join();
    EXPECT_EQ(events, (std::vector<std::string>{"a acquired", "b refused", "b acquired"}));
    EXPECT_TRUE(b.held());
    b.unlock();
}

TEST(AsyncFairLock, AWaitThatRunsOutLeavesNoQueueEntryAndNoWaiterLease) {
    one_server s;
    fair_lock holder(s.pool, "timeout", {.timing = {.ttl = 30s}});
    fair_lock waiter(s.pool, "timeout", {.timing = {.ttl = 30s}, .waiter_lease = 6s});
    ASSERT_TRUE(holder.try_lock());
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_FALSE(async_acquire(waiter, 300ms, asio::use_future).get());
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 300ms);
    EXPECT_TRUE(s.queue_of(waiter).empty()) << "a queue entry was left behind";
    EXPECT_FALSE(s.lease_left(waiter)) << "a waiter lease was left behind";
    EXPECT_FALSE(waiter.held());
}

TEST(AsyncFairLock, CancellationMidWaitLeavesNoKeyNoQueueEntryAndNoWaiterLease) {
    one_server s;
    fair_lock holder(s.pool, "cancel", {.timing = {.ttl = 30s}});
    fair_lock waiter(s.pool, "cancel", {.timing = {.ttl = 30s}, .waiter_lease = 6s});
    ASSERT_TRUE(holder.try_lock());
    asio::cancellation_signal cancel;
    std::promise<std::exception_ptr> done;
    async_acquire(waiter, 30s,
                  asio::bind_cancellation_slot(
                      cancel.slot(), [&](std::exception_ptr e, std::optional<lock_acquisition> a) {
                          EXPECT_FALSE(a);
                          done.set_value(e);
                      }));
    ASSERT_TRUE(eventually([&] { return s.queue_of(waiter).size() == 1; }, 5s))
        << "it never queued";
    asio::post(s.rt->io(), [&] { cancel.emit(asio::cancellation_type::terminal); });
    auto f = done.get_future();
    ASSERT_EQ(f.wait_for(5s), std::future_status::ready) << "the cancelled wait did not end";
    EXPECT_TRUE(redcoord::testing::is_operation_aborted(f.get()));
    EXPECT_TRUE(s.queue_of(waiter).empty()) << "a queue entry was left behind";
    EXPECT_FALSE(s.lease_left(waiter)) << "a waiter lease was left behind";
    holder.unlock();
    std::this_thread::sleep_for(200ms);  // a late attempt would take the free lock now
    EXPECT_TRUE(s.server.command({"GET", holder.key()}).is_nil());
    EXPECT_FALSE(waiter.held());
    EXPECT_TRUE(waiter.try_lock());  // the object is free for its next acquire
    waiter.unlock();
}

TEST(AsyncFairLock, BadCallsAreRefusedBeforeAnythingIsSent) {
    one_server s;
    fair_lock lock(s.pool, "bad", {.timing = {.ttl = 10s}});
    EXPECT_THROW(async_acquire(lock, -1ms, asio::use_future), invalid_argument);
    ASSERT_TRUE(lock.try_lock());
    EXPECT_THROW(async_acquire(lock, 0ms, asio::use_future), invalid_argument);  // held
    lock.unlock();
    fair_lock replicated(s.pool, "rep", {.timing = {.ttl = 10s}, .replication = {.replicas = 1}});
    EXPECT_THROW(async_acquire(replicated, 0ms, asio::use_future), invalid_argument);
}

}  // namespace async_fair_lock_test
