// async_acquire (redcoord/lock/async.hpp) against real redis-server processes: a callback, a
// future, a coroutine on the caller's io_context, waits woken by releases, cancellation that
// leaves no key, typed errors, and many operations sharing one pipelined socket.

#include <redcoord/core/errors.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/lock/async.hpp>
#include <redcoord/lock/errors.hpp>
#include <redcoord/testing/async.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/wait.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/system/system_error.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::eventually;
using redcoord::testing::local_server;
namespace asio = boost::asio;

namespace {

using one_server = redcoord::testing::runtime_server;

// The number of clients connected to `s` (CLIENT LIST counts this call's own connection).
std::size_t clients(local_server& s) {
    const auto list = s.command({"CLIENT", "LIST"}).text();
    return static_cast<std::size_t>(std::count(list.begin(), list.end(), '\n'));
}

}  // namespace

TEST(AsyncLock, CallbackAcquiresAFreeLockAndTheObjectHoldsIt) {
    one_server s;
    distributed_lock lock(s.pool, "res", {.timing = {.ttl = 10s}});
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

TEST(AsyncLock, ACallbackNeverRunsOnTheRuntimesIoThreadAndASlowOneDelaysNoOther) {
    one_server s;
    std::promise<std::thread::id> io_thread;
    asio::post(s.rt->io(), [&] { io_thread.set_value(std::this_thread::get_id()); });
    const auto io_id = io_thread.get_future().get();
    distributed_lock slow(s.pool, "slow", {.timing = {.ttl = 10s}});
    distributed_lock quick(s.pool, "quick", {.timing = {.ttl = 10s}});
    std::promise<std::thread::id> slow_ran;
    std::promise<void> quick_done;
    async_acquire(slow, 0ms, [&](std::exception_ptr, std::optional<lock_acquisition>) {
        slow_ran.set_value(std::this_thread::get_id());
        std::this_thread::sleep_for(3s);  // user code that blocks
    });
    EXPECT_NE(slow_ran.get_future().get(), io_id);
    // The slow handler still runs: the quick lock's attempt and its handler go on.
    const auto t0 = std::chrono::steady_clock::now();
    async_acquire(quick, 0ms, [&](std::exception_ptr e, std::optional<lock_acquisition> a) {
        EXPECT_FALSE(e);
        EXPECT_TRUE(a);
        quick_done.set_value();
    });
    ASSERT_EQ(quick_done.get_future().wait_for(2s), std::future_status::ready)
        << "a slow completion handler held up another operation";
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
    quick.unlock();
    slow.unlock();
}

TEST(AsyncLock, FutureWaitsForTheHoldersReleaseAndGetsTheLock) {
    one_server s;
    distributed_lock holder(s.pool, "res", {.timing = {.ttl = 30s}});
    distributed_lock waiter(s.pool, "res", {.timing = {.ttl = 30s}});
    ASSERT_TRUE(holder.try_lock());
    auto f = async_acquire(waiter, 20s, asio::use_future);
    EXPECT_EQ(f.wait_for(300ms), std::future_status::timeout);  // held: still waiting
    holder.unlock();
    ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
    auto got = f.get();
    ASSERT_TRUE(got);
    EXPECT_TRUE(waiter.held());
    EXPECT_GT(got->fencing_token, 0u);
    EXPECT_EQ(s.server.command({"GET", waiter.key()}).text(), got->token);
    waiter.unlock();
}

TEST(AsyncLock, AWaitThatRunsOutCompletesWithNothingAndLeavesTheObjectFree) {
    one_server s;
    distributed_lock holder(s.pool, "res", {.timing = {.ttl = 30s}});
    distributed_lock waiter(s.pool, "res", {.timing = {.ttl = 30s}});
    ASSERT_TRUE(holder.try_lock());
    auto got = async_acquire(waiter, 200ms, asio::use_future).get();
    EXPECT_FALSE(got);
    EXPECT_FALSE(waiter.held());
    holder.unlock();
    // The gate was left: the object can acquire again, blocking or not.
    EXPECT_TRUE(waiter.try_lock());
    waiter.unlock();
}

TEST(AsyncLock, CoroutineOnTheCallersIoContextRunsWithoutARuntimeThread) {
    local_server server;
    asio::io_context io;
    auto rt = runtime::create(io);
    connection_pool pool(server.endpoint(), {}, rt);
    distributed_lock a(pool, "res", {.timing = {.ttl = 10s}});
    distributed_lock b(pool, "res", {.timing = {.ttl = 10s}});
    std::vector<std::string> events;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            auto first = co_await async_acquire(a, 0ms, asio::use_awaitable);
            events.push_back(first ? "a acquired" : "a refused");
            auto second = co_await async_acquire(b, 0ms, asio::use_awaitable);
            events.push_back(second ? "b acquired" : "b refused");
            a.unlock();
            auto third = co_await async_acquire(b, 5s, asio::use_awaitable);
            events.push_back(third ? "b acquired" : "b refused");
            b.unlock();
        },
        asio::detached);
    io.run();  // the test's thread is the event loop: it returns once the coroutine is done
    EXPECT_EQ(events, (std::vector<std::string>{"a acquired", "b refused", "b acquired"}));
    EXPECT_TRUE(server.command({"GET", b.key()}).is_nil());
}

TEST(AsyncLock, CancellationMidWaitEndsAtOnceAndLeavesNoKeyAndNoWaiterEntry) {
    one_server s;
    distributed_lock holder(s.pool, "res", {.timing = {.ttl = 30s}});
    distributed_lock waiter(s.pool, "res", {.timing = {.ttl = 30s}});
    ASSERT_TRUE(holder.try_lock());
    asio::cancellation_signal cancel;
    std::promise<std::exception_ptr> done;
    async_acquire(waiter, 30s,
                  asio::bind_cancellation_slot(
                      cancel.slot(), [&](std::exception_ptr e, std::optional<lock_acquisition> a) {
                          EXPECT_FALSE(a);
                          done.set_value(e);
                      }));
    std::this_thread::sleep_for(200ms);  // it has attempted and waits for the release
    // The slot is emitted from the runtime's event loop, as Asio requires of a slot's owner.
    asio::post(s.rt->io(), [&] { cancel.emit(asio::cancellation_type::terminal); });
    auto f = done.get_future();
    ASSERT_EQ(f.wait_for(5s), std::future_status::ready) << "the cancelled wait did not end";
    EXPECT_TRUE(redcoord::testing::is_operation_aborted(f.get()));
    EXPECT_FALSE(waiter.held());
    holder.unlock();
    std::this_thread::sleep_for(100ms);  // a late attempt would take the free lock now
    EXPECT_TRUE(s.server.command({"GET", holder.key()}).is_nil());
    // The waiter's entry (bounded unfairness) lapses after its grace.
    EXPECT_TRUE(eventually(
        [&] {
            return s.server.command({"EXISTS", holder.key() + ":waiting"}).integer() == 0;
        },
        2s))
        << "a waiter entry was left behind";
    EXPECT_TRUE(waiter.try_lock());  // the object is free for its next acquire
    waiter.unlock();
}

TEST(AsyncLock, ErrorsAreTypedAsTheBlockingAcquireThrowsThem) {
    {
        local_server server({.password = "right"});
        auto ep = server.endpoint();
        ep.password = "wrong";
        auto rt = runtime::create();
        connection_pool pool(ep, {}, rt);
        distributed_lock lock(pool, "res");
        EXPECT_THROW((void)async_acquire(lock, 0ms, asio::use_future).get(), auth_error);
        EXPECT_FALSE(lock.held());
    }
    {
        endpoint nowhere;
        nowhere.port = redcoord::testing::free_port();
        auto rt = runtime::create();
        connection_pool pool(nowhere, {}, rt);
        distributed_lock lock(pool, "res");
        EXPECT_THROW((void)async_acquire(lock, 0ms, asio::use_future).get(), connection_error);
    }
}

TEST(AsyncLock, APausedServerEndsATimedWaitNearItsDeadline) {
    one_server s;
    distributed_lock lock(s.pool, "res", {.timing = {.ttl = 10s}});
    ASSERT_TRUE(lock.try_lock());  // connects and loads the script
    lock.unlock();
    s.server.pause();
    const auto t0 = std::chrono::steady_clock::now();
    auto f = async_acquire(lock, 300ms, asio::use_future);
    ASSERT_EQ(f.wait_for(5s), std::future_status::ready);
    EXPECT_FALSE(f.get());  // cut by its own deadline: not acquired, no error
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
    s.server.resume();
}

TEST(AsyncLock, UnsupportedLocksAndASecondAcquireAreRefusedBeforeAnythingIsSent) {
    one_server s;
    distributed_lock replicated(s.pool, "r", {.replication = {.replicas = 1}});
    EXPECT_THROW((void)async_acquire(replicated, 0ms, asio::use_future), invalid_argument);
    distributed_lock lock(s.pool, "res");
    EXPECT_THROW((void)async_acquire(lock, -1ms, asio::use_future), invalid_argument);
    ASSERT_TRUE(lock.try_lock());
    EXPECT_THROW((void)async_acquire(lock, 0ms, asio::use_future), invalid_argument);
    lock.unlock();
    EXPECT_TRUE(s.server.command({"EXISTS", replicated.key()}).integer() == 0);
}

TEST(AsyncLock, AThousandOperationsShareOneSocketAndAllAcquire) {
    one_server s;
    constexpr int n = 1000;
    std::vector<std::unique_ptr<distributed_lock>> locks;
    for (int i = 0; i < n; ++i)
        locks.push_back(std::make_unique<distributed_lock>(s.pool, "res" + std::to_string(i),
                                                           lock_options{.timing = {.ttl = 30s}}));
    const auto before = clients(s.server);
    std::atomic<int> acquired{0}, failed{0};
    std::promise<void> all;
    std::atomic<int> left{n};
    for (auto& l : locks)
        async_acquire(*l, 5s, [&](std::exception_ptr e, std::optional<lock_acquisition> a) {
            (a && !e ? acquired : failed)++;
            if (--left == 0) all.set_value();
        });
    ASSERT_EQ(all.get_future().wait_for(60s), std::future_status::ready);
    EXPECT_EQ(acquired.load(), n);
    EXPECT_EQ(failed.load(), 0);
    // One pipelined link (plus the pool's connections the test opened before): no socket per
    // operation.
    EXPECT_LE(clients(s.server), before + 1);
    for (auto& l : locks) l->unlock();
}

TEST(AsyncLock, RedlockGetsAMajorityAndReportsAnUnreachableQuorum) {
    auto masters = redcoord::testing::start_masters(3);
    auto rt = runtime::create();
    std::vector<std::unique_ptr<connection_pool>> pools;
    std::vector<connection_pool*> nodes;
    for (auto& m : masters) {
        pools.push_back(std::make_unique<connection_pool>(m->endpoint(), pool_options{}, rt));
        nodes.push_back(pools.back().get());
    }
    redlock a(nodes, "res", {.timing = {.ttl = 10s}});
    redlock b(nodes, "res", {.timing = {.ttl = 10s}});
    auto got = async_acquire(a, 0ms, asio::use_future).get();
    ASSERT_TRUE(got);
    for (auto& m : masters) EXPECT_EQ(m->command({"GET", a.key()}).text(), got->token);
    // Held on every master: b waits, and gets it once a releases.
    auto waiting = async_acquire(b, 20s, asio::use_future);
    EXPECT_EQ(waiting.wait_for(300ms), std::future_status::timeout);
    a.unlock();
    ASSERT_EQ(waiting.wait_for(10s), std::future_status::ready);
    ASSERT_TRUE(waiting.get());
    b.unlock();
    // One master down: a majority is still there.
    masters[0]->kill();
    ASSERT_TRUE(async_acquire(a, 2s, asio::use_future).get());
    a.unlock();
    // Two down: no majority, said at once.
    masters[1]->kill();
    EXPECT_THROW((void)async_acquire(a, 0ms, asio::use_future).get(), quorum_unreachable);
    EXPECT_FALSE(a.held());
}

TEST(AsyncLock, AsyncReleaseDeletesTheKeyAndFreesTheObjectAtOnce) {
    one_server s;
    distributed_lock lock(s.pool, "res", {.timing = {.ttl = 10s}});
    ASSERT_TRUE(async_acquire(lock, 0ms, asio::use_future).get());
    std::promise<std::pair<std::exception_ptr, std::optional<bool>>> done;
    async_release(lock, [&](std::exception_ptr e, std::optional<bool> released) {
        done.set_value({e, released});
    });
    EXPECT_FALSE(lock.held());  // taken by the initiation itself
    auto [e, released] = done.get_future().get();
    ASSERT_FALSE(e);
    ASSERT_TRUE(released);
    EXPECT_TRUE(*released);
    EXPECT_TRUE(s.server.command({"GET", lock.key()}).is_nil());
    // Nothing held: nothing is sent, and the completion says so.
    auto again = async_release(lock, asio::use_future).get();
    EXPECT_FALSE(again.has_value());
}

TEST(AsyncLock, AsyncReleaseOfAnExpiredHoldingSaysNotOursAndLeavesTheNewHoldersKey) {
    one_server s;
    distributed_lock lock(s.pool, "res", {.timing = {.ttl = 10s}});
    ASSERT_TRUE(lock.try_lock());
    // Another holder took the key after ours ended (simulated: the key rewritten).
    s.server.command({"SET", lock.key(), "someone-else", "PX", "10000"});
    auto released = async_release(lock, asio::use_future).get();
    ASSERT_TRUE(released.has_value());
    EXPECT_FALSE(*released);
    EXPECT_EQ(s.server.command({"GET", lock.key()}).text(), "someone-else");
}

TEST(AsyncLock, AsyncReleaseWakesAnAsyncWaiterWithoutPolling) {
    one_server s;
    // A retry interval far beyond the test's patience: only the release notice can wake it.
    distributed_lock holder(s.pool, "res", {.timing = {.ttl = 60s}});
    distributed_lock waiter(s.pool, "res", {.timing = {.ttl = 60s, .max_retry_interval = 30s}});
    ASSERT_TRUE(holder.try_lock());
    auto got = async_acquire(waiter, 60s, asio::use_future);
    std::this_thread::sleep_for(300ms);  // it has attempted and waits
    ASSERT_TRUE(async_release(holder, asio::use_future).get().value_or(false));
    ASSERT_EQ(got.wait_for(10s), std::future_status::ready) << "the release did not wake it";
    EXPECT_TRUE(got.get());
    waiter.unlock();
}

TEST(AsyncLock, AnAcquireAndAsyncReleaseLoopNeverBorrowsAPooledConnection) {
    local_server server;
    asio::io_context io;
    auto rt = runtime::create(io);
    connection_pool pool(server.endpoint(), {}, rt);
    std::vector<std::unique_ptr<distributed_lock>> locks;
    for (int k = 0; k < 8; ++k)
        locks.push_back(
            std::make_unique<distributed_lock>(pool, "loop" + std::to_string(k), lock_options{}));
    int rounds = 0;
    for (auto& l : locks)
        asio::co_spawn(
            io,
            [&, lock = l.get()]() -> asio::awaitable<void> {
                for (int i = 0; i < 50; ++i) {
                    if (!co_await async_acquire(*lock, 1s, asio::use_awaitable)) continue;
                    if ((co_await async_release(*lock, asio::use_awaitable)).value_or(false))
                        ++rounds;
                }
            },
            asio::detached);
    io.run();
    EXPECT_EQ(rounds, 8 * 50);
    EXPECT_EQ(pool.stats().created, 0u) << "the loop borrowed a pooled connection";
    for (auto& l : locks) EXPECT_TRUE(server.command({"GET", l->key()}).is_nil());
}

TEST(AsyncLock, CancellingAnAsyncReleaseStillReleases) {
    one_server s;
    distributed_lock lock(s.pool, "res", {.timing = {.ttl = 30s}});
    ASSERT_TRUE(lock.try_lock());
    asio::cancellation_signal cancel;
    std::promise<std::exception_ptr> done;
    asio::post(s.rt->io(), [&] {
        async_release(lock, asio::bind_cancellation_slot(
                                cancel.slot(), [&](std::exception_ptr e, std::optional<bool>) {
                                    done.set_value(e);
                                }));
        cancel.emit(asio::cancellation_type::terminal);
    });
    auto f = done.get_future();
    ASSERT_EQ(f.wait_for(5s), std::future_status::ready);
    const auto e = f.get();
    // Either the verdict came first or the wait for it was cut: the key goes either way.
    EXPECT_TRUE(!e || redcoord::testing::is_operation_aborted(e));
    EXPECT_TRUE(eventually([&] { return s.server.command({"GET", lock.key()}).is_nil(); }, 5s));
}

// Issue 35, item 6: a lock taken by async_acquire keeps its validity on the runtime's clock, as
// the blocking path does: its watchdog extends once the clock reaches a third of the TTL, and
// the new validity counts from the advanced clock (a minute-long TTL: without the clock seam
// the wait below would fail).
TEST(AsyncLock, AnAsyncHoldsWatchdogFollowsTheRuntimesClock) {
    one_server s;
    distributed_lock lock(s.pool, "clock-async", {.timing = {.ttl = 60s}, .watchdog = true});
    auto f = async_acquire(lock, 0ms, asio::use_future);
    ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
    const auto got = f.get();
    ASSERT_TRUE(got);
    ASSERT_EQ(s.server.command({"PEXPIRE", lock.key(), "30000"}).integer(), 1);
    s.rt->clock().advance(20s + 1ms);
    ASSERT_TRUE(eventually(
        [&] {
            return s.server.command({"PTTL", lock.key()}).integer() > 50000;
        },
        5s));
    ASSERT_TRUE(
        eventually([&] { return lock.current()->valid_until >= got->valid_until + 19s; }, 5s));
    EXPECT_FALSE(lock.lost());
    lock.unlock();
}
