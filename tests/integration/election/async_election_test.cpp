// async_wait_until_leader (redcoord/election/async.hpp) against real redis-server processes:
// callbacks, futures, coroutines on the caller's io_context, timeouts, cancellation that
// leaves no watcher behind, a resign that wakes another candidate's wait, and typed errors.

#include <redcoord/core/detail/serial_executor.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/election/acl.hpp>
#include <redcoord/election/async.hpp>
#include <redcoord/testing/async.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/wait.hpp>

#include "../acl_support.hpp"
#include "leadership_watch.hpp"  // election/src: the watchers a wait registers

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

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

using leadership = leader_elector::leadership;
using wait_result = std::pair<std::exception_ptr, std::optional<leadership>>;

election_options opts(std::string id, std::chrono::milliseconds term = 600ms,
                      std::chrono::milliseconds retry = 0ms) {
    election_options o;
    o.identity = std::move(id);
    o.term = term;
    o.retry_period = retry;
    return o;
}

std::size_t watchers(leader_elector& e) { return detail::elector_access::watchers(e)->size(); }

using one_server = redcoord::testing::runtime_server;

}  // namespace

TEST(AsyncElection, CallbackGetsTheLeadershipOnTheCallbackExecutor) {
    one_server s;
    leader_elector e(s.pool, "cb", opts("me"));
    std::promise<wait_result> done;
    std::atomic<bool> on_callbacks{false};
    async_wait_until_leader(e, 20s, [&](std::exception_ptr x, std::optional<leadership> l) {
        on_callbacks = s.rt->callbacks().on_executor_thread();
        done.set_value({x, std::move(l)});
    });
    auto f = done.get_future();
    EXPECT_EQ(f.wait_for(200ms), std::future_status::timeout);  // not started: not leading
    e.start();
    ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
    auto [x, l] = f.get();
    ASSERT_FALSE(x);
    ASSERT_TRUE(l);
    EXPECT_GT(l->epoch, 0u);
    EXPECT_EQ(l->epoch, e.epoch());
    EXPECT_FALSE(l->stop.stop_requested());
    EXPECT_TRUE(on_callbacks) << "the handler ran off the runtime's callback executor";
    EXPECT_EQ(watchers(e), 0u);
    // The leadership's token is the elector's: it stops when the leadership ends.
    e.resign();
    EXPECT_TRUE(l->stop.stop_requested());
}

TEST(AsyncElection, FutureOfALeaderCompletesAtOnceAndAFollowersZeroWaitWithNothing) {
    one_server s;
    leader_elector a(s.pool, "now", opts("a")), b(s.pool, "now", opts("b"));
    a.start();
    ASSERT_TRUE(eventually([&] { return a.is_leader(); }, 5s));
    b.start();
    ASSERT_TRUE(eventually([&] { return b.rounds() >= 1; }, 5s));
    auto l = async_wait_until_leader(a, 0ms, asio::use_future).get();
    ASSERT_TRUE(l);
    EXPECT_EQ(l->epoch, a.epoch());
    EXPECT_FALSE(async_wait_until_leader(b, 0ms, asio::use_future).get());
    EXPECT_EQ(watchers(a), 0u);
    EXPECT_EQ(watchers(b), 0u);
}

TEST(AsyncElection, FollowerTimesOutWithNothingAndLeavesNoWatcher) {
    one_server s;
    leader_elector a(s.pool, "to", opts("a")), b(s.pool, "to", opts("b"));
    a.start();
    ASSERT_TRUE(eventually([&] { return a.is_leader(); }, 5s));
    b.start();
    auto f = async_wait_until_leader(b, 300ms, asio::use_future);
    ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
    EXPECT_FALSE(f.get());
    EXPECT_EQ(watchers(b), 0u);
    EXPECT_TRUE(a.is_leader());
}

// The follower campaigns only every 20 s: only the leader's handoff signal can make it leader
// within the wait's 15 s.
TEST(AsyncElection, AResigningLeaderWakesAnotherCandidatesWait) {
    one_server s;
    leader_elector a(s.pool, "handoff", opts("a", 60s, 20s)),
        b(s.pool, "handoff", opts("b", 60s, 20s));
    a.start();
    ASSERT_TRUE(eventually([&] { return a.is_leader(); }, 5s));
    b.start();
    ASSERT_TRUE(eventually([&] { return b.rounds() >= 1; }, 5s));
    auto f = async_wait_until_leader(b, 15s, asio::use_future);
    EXPECT_EQ(f.wait_for(300ms), std::future_status::timeout);
    const auto old_epoch = a.epoch();
    EXPECT_TRUE(a.resign());
    ASSERT_EQ(f.wait_for(20s), std::future_status::ready);
    auto l = f.get();
    ASSERT_TRUE(l) << "the wait ran out: the resign did not wake it";
    EXPECT_GT(l->epoch, old_epoch);
    EXPECT_TRUE(b.is_leader());
    EXPECT_EQ(watchers(b), 0u);
}

TEST(AsyncElection, CoroutineOnTheCallersIoContext) {
    local_server server;
    asio::io_context io;
    auto rt = runtime::create(io);
    connection_pool pool(server.endpoint(), {}, rt);
    leader_elector a(pool, "co", opts("a", 60s, 20s)), b(pool, "co", opts("b", 60s, 20s));
    a.start();
    ASSERT_TRUE(eventually([&] { return a.is_leader(); }, 5s));
    b.start();
    ASSERT_TRUE(eventually([&] { return b.rounds() >= 1; }, 5s));
    std::vector<std::string> got;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            auto none = co_await async_wait_until_leader(b, 100ms, asio::use_awaitable);
            got.push_back(none ? "leader" : "timeout");
            asio::post(io, [&] { a.resign(); });  // the leader steps down while b waits
            auto l = co_await async_wait_until_leader(b, 15s, asio::use_awaitable);
            got.push_back(l && l->epoch == b.epoch() ? "leader" : "no");
        },
        asio::detached);
    io.run();  // the test's thread is the event loop
    EXPECT_EQ(got, (std::vector<std::string>{"timeout", "leader"}));
    EXPECT_EQ(watchers(b), 0u);
}

TEST(AsyncElection, CancellationMidWaitEndsAtOnceAndLeavesNoWatcher) {
    one_server s;
    leader_elector a(s.pool, "cancel", opts("a")), b(s.pool, "cancel", opts("b"));
    a.start();
    ASSERT_TRUE(eventually([&] { return a.is_leader(); }, 5s));
    b.start();
    asio::cancellation_signal cancel;
    std::promise<wait_result> done;
    async_wait_until_leader(
        b, 30s,
        asio::bind_cancellation_slot(cancel.slot(),
                                     [&](std::exception_ptr x, std::optional<leadership> l) {
                                         done.set_value({x, std::move(l)});
                                     }));
    EXPECT_EQ(watchers(b), 1u);
    std::this_thread::sleep_for(100ms);
    asio::post(s.rt->io(), [&] { cancel.emit(asio::cancellation_type::terminal); });
    auto f = done.get_future();
    ASSERT_EQ(f.wait_for(5s), std::future_status::ready) << "the cancelled wait did not end";
    auto [x, l] = f.get();
    EXPECT_TRUE(redcoord::testing::is_operation_aborted(x));
    EXPECT_FALSE(l);
    EXPECT_EQ(watchers(b), 0u);
    // The candidate itself goes on campaigning: it takes over when the leader resigns.
    a.resign();
    EXPECT_TRUE(eventually([&] { return b.is_leader(); }, 10s));
}

TEST(AsyncElection, StoppingOrDestroyingTheElectorAbortsTheWait) {
    one_server s;
    leader_elector a(s.pool, "stop", opts("a"));
    a.start();
    ASSERT_TRUE(eventually([&] { return a.is_leader(); }, 5s));
    leader_elector b(s.pool, "stop", opts("b"));
    b.start();
    auto stopped = async_wait_until_leader(b, 30s, asio::use_future);
    b.stop();
    ASSERT_EQ(stopped.wait_for(5s), std::future_status::ready);
    try {
        (void)stopped.get();
        ADD_FAILURE() << "a stopped elector's wait completed without an error";
    } catch (const boost::system::system_error& e) {
        EXPECT_EQ(e.code(), asio::error::operation_aborted);
    }
    auto c = std::make_unique<leader_elector>(s.pool, "stop", opts("c"));
    auto watch = detail::elector_access::watchers(*c);
    auto destroyed = async_wait_until_leader(*c, 30s, asio::use_future);  // never started
    c.reset();
    ASSERT_EQ(destroyed.wait_for(5s), std::future_status::ready);
    EXPECT_THROW((void)destroyed.get(), boost::system::system_error);
    EXPECT_EQ(watch->size(), 0u);
}

TEST(AsyncElection, ANegativeTimeoutIsRefused) {
    one_server s;
    leader_elector e(s.pool, "bad", opts("me"));
    EXPECT_THROW((void)async_wait_until_leader(e, -1ms, asio::use_future), invalid_argument);
    EXPECT_EQ(watchers(e), 0u);
}

// A round the server's ACL refuses will not succeed by waiting: the wait ends with it.
TEST(AsyncElection, AnAclRefusalEndsTheWaitWithPermissionError) {
    local_server server;
    auto rt = runtime::create();
    connection_pool pool(redcoord::testing::make_acl_user(
                             server, "election_no_eval",
                             redcoord::testing::without_command(election_acl_needs(), "eval")),
                         {}, rt);
    leader_elector e(pool, "acl", opts("me"));
    auto f = async_wait_until_leader(e, 20s, asio::use_future);
    e.start();
    ASSERT_EQ(f.wait_for(15s), std::future_status::ready);
    EXPECT_THROW((void)f.get(), permission_error);
    EXPECT_EQ(watchers(e), 0u);
}
