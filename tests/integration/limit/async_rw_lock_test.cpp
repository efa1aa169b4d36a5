// async_lock / async_lock_shared(rw_lock&, ...) (redcoord/limit/async.hpp) against real
// redis-server processes: a callback, a future, a coroutine on the caller's io_context, waits
// woken by releases (not polling), timeouts and cancellation that leave no hold, no intent
// and no waiter entry.

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

// A namespace of its own: a unity batch compiles this file with others (tests/CMakeLists.txt).
namespace async_rw_lock_test {

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::eventually;
using redcoord::testing::local_server;
namespace asio = boost::asio;

namespace {

struct one_server : redcoord::testing::runtime_server {
    std::string key(const std::string& name, const char* part = nullptr) {
        return part ? make_key(default_prefix, "rwlock", name, part)
                    : make_key(default_prefix, "rwlock", name);
    }
    // Any intent of a writer or waiter entry left under `name`.
    bool entries_left(const std::string& name) {
        return server.command({"EXISTS", key(name, "writers"), key(name, "waiting")}).integer() !=
               0;
    }
};

}  // namespace

TEST(AsyncRwLock, CallbackTakesTheExclusiveHoldAndTheObjectRecordsIt) {
    one_server s;
    rw_lock lock(s.pool, "doc", {.timing = {.ttl = 10s}});
    std::promise<std::pair<std::exception_ptr, std::optional<std::uint64_t>>> done;
    async_lock(lock, 0ms, [&](std::exception_ptr e, std::optional<std::uint64_t> fence) {
        done.set_value({e, fence});
    });
    auto [e, fence] = done.get_future().get();
    ASSERT_FALSE(e);
    ASSERT_TRUE(fence);
    EXPECT_GT(*fence, 0u);
    EXPECT_TRUE(lock.owns_lock());
    EXPECT_EQ(lock.fencing_token(), *fence);
    lock.unlock();
    EXPECT_FALSE(lock.owns_lock());
    EXPECT_EQ(s.server.command({"EXISTS", s.key("doc", "writer")}).integer(), 0);
}

TEST(AsyncRwLock, SharesAreTakenTogetherAndAWaitingReaderIsWokenByTheWritersRelease) {
    one_server s;
    rw_lock writer(s.pool, "doc", {.timing = {.ttl = 60s}});
    rw_lock readers(s.pool, "doc", {.timing = {.ttl = 60s, .max_retry_interval = 30s}});
    ASSERT_TRUE(writer.try_lock());
    auto waiting = async_lock_shared(readers, 60s, asio::use_future);
    std::this_thread::sleep_for(300ms);  // it has attempted and sleeps
    ASSERT_EQ(waiting.wait_for(0s), std::future_status::timeout);
    writer.unlock();
    ASSERT_EQ(waiting.wait_for(10s), std::future_status::ready) << "the release did not wake it";
    EXPECT_TRUE(waiting.get());
    auto second = async_lock_shared(readers, 0ms, asio::use_future).get();
    EXPECT_TRUE(second);
    EXPECT_EQ(readers.shared_count(), 2u);
    readers.unlock_shared();
    readers.unlock_shared();
}

TEST(AsyncRwLock, CoroutineOnTheCallersIoContext) {
    local_server server;
    asio::io_context io;
    auto rt = runtime::create(io);
    connection_pool pool(server.endpoint(), {}, rt);
    rw_lock a(pool, "co", {.timing = {.ttl = 10s}});
    rw_lock b(pool, "co", {.timing = {.ttl = 10s}});
    std::vector<std::string> events;
    std::thread releaser;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            auto share = co_await async_lock_shared(a, 0ms, asio::use_awaitable);
            events.push_back(share ? "a shared" : "a refused");
            auto excl = co_await async_lock(b, 0ms, asio::use_awaitable);
            events.push_back(excl ? "b exclusive" : "b refused");
            // The release goes over the blocking pool from a helper thread: the loop's thread
            // must not block. Joined before what it releases goes.
            releaser = std::thread([&a] { a.unlock_shared(); });
            auto later = co_await async_lock(b, 10s, asio::use_awaitable);
            events.push_back(later ? "b exclusive" : "b refused");
        },
        asio::detached);
    io.run();
    if (releaser.joinable()) releaser.join();
    EXPECT_EQ(events, (std::vector<std::string>{"a shared", "b refused", "b exclusive"}));
    EXPECT_TRUE(b.owns_lock());
    b.unlock();
}

TEST(AsyncRwLock, AWriterWhoseWaitRunsOutLeavesNoIntentAndNoWaiterEntry) {
    one_server s;
    rw_lock reader(s.pool, "busy", {.timing = {.ttl = 30s}});
    rw_lock writer(s.pool, "busy", {.timing = {.ttl = 30s}});
    ASSERT_TRUE(reader.try_lock_shared());
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_FALSE(async_lock(writer, 300ms, asio::use_future).get());
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 300ms);
    EXPECT_FALSE(s.entries_left("busy")) << "an intent or waiter entry was left behind";
    EXPECT_FALSE(writer.owns_lock());
    // No intent left: a new reader is not held back.
    EXPECT_TRUE(async_lock_shared(reader, 0ms, asio::use_future).get());
}

TEST(AsyncRwLock, CancellationMidWaitLeavesNoHoldNoIntentAndNoWaiterEntry) {
    one_server s;
    rw_lock reader(s.pool, "cancel", {.timing = {.ttl = 30s}});
    rw_lock writer(s.pool, "cancel", {.timing = {.ttl = 30s}});
    ASSERT_TRUE(reader.try_lock_shared());
    asio::cancellation_signal cancel;
    std::promise<std::exception_ptr> done;
    async_lock(writer, 30s,
               asio::bind_cancellation_slot(
                   cancel.slot(), [&](std::exception_ptr e, std::optional<std::uint64_t> fence) {
                       EXPECT_FALSE(fence);
                       done.set_value(e);
                   }));
    ASSERT_TRUE(eventually([&] { return s.entries_left("cancel"); }, 5s)) << "it never queued";
    asio::post(s.rt->io(), [&] { cancel.emit(asio::cancellation_type::terminal); });
    auto f = done.get_future();
    ASSERT_EQ(f.wait_for(5s), std::future_status::ready) << "the cancelled wait did not end";
    EXPECT_TRUE(redcoord::testing::is_operation_aborted(f.get()));
    EXPECT_FALSE(s.entries_left("cancel")) << "an intent or waiter entry was left behind";
    reader.unlock_shared();
    std::this_thread::sleep_for(200ms);  // a late attempt would take the free lock now
    EXPECT_EQ(s.server.command({"EXISTS", s.key("cancel", "writer")}).integer(), 0);
    EXPECT_FALSE(writer.owns_lock());
}

TEST(AsyncRwLock, ACallThatWouldWaitForItselfIsRefusedBeforeAnythingIsSent) {
    one_server s;
    rw_lock lock(s.pool, "self", {.timing = {.ttl = 10s}});
    ASSERT_TRUE(lock.try_lock());
    EXPECT_THROW(async_lock(lock, 0ms, asio::use_future), invalid_argument);
    EXPECT_THROW(async_lock_shared(lock, 0ms, asio::use_future), invalid_argument);
    lock.unlock();
    ASSERT_TRUE(lock.try_lock_shared());
    EXPECT_THROW(async_lock(lock, 0ms, asio::use_future), invalid_argument);
    EXPECT_THROW(async_lock_shared(lock, -1ms, asio::use_future), invalid_argument);
    lock.unlock_shared();
}

}  // namespace async_rw_lock_test
