#include <redcoord/core/detail/serial_executor.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/election/leader_task.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <mutex>
#include <thread>

// A namespace of its own: a unity batch compiles this file with others (tests/CMakeLists.txt).
namespace leader_task_test {

using namespace redcoord;
using namespace std::chrono_literals;
using redcoord::testing::local_server;

namespace {
election_options opts(std::string id, std::chrono::milliseconds term) {
    election_options o;
    o.identity = std::move(id);
    o.term = term;
    return o;
}
}  // namespace

TEST(LeaderTask, RunsOnlyOnTheLeaderWithItsEpoch) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    leader_elector a(pool, "task", opts("a", 600ms)), b(pool, "task", opts("b", 600ms));
    std::mutex mu;
    std::vector<std::pair<char, std::uint64_t>> runs;
    leader_task ta(a, 20ms, [&](std::uint64_t ep, std::stop_token) {
        std::lock_guard g(mu);
        runs.emplace_back('a', ep);
    });
    leader_task tb(b, 20ms, [&](std::uint64_t ep, std::stop_token) {
        std::lock_guard g(mu);
        runs.emplace_back('b', ep);
    });
    a.start();
    std::this_thread::sleep_for(200ms);
    b.start();
    std::this_thread::sleep_for(800ms);
    ta.stop();
    tb.stop();
    std::lock_guard g(mu);
    ASSERT_FALSE(runs.empty());
    for (auto& [who, ep] : runs) {
        EXPECT_EQ(who, 'a');
        EXPECT_EQ(ep, runs.front().second);
    }
    EXPECT_EQ(tb.runs(), 0u);
}

TEST(LeaderTask, StopTokenFiresWhenLeadershipIsRevokedMidRun) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    leader_elector e(pool, "revoke", opts("me", 600ms));
    std::atomic<bool> started{false}, saw_stop{false}, leader_when_stopped{true};
    leader_task t(e, 10ms, [&](std::uint64_t, std::stop_token st) {
        started = true;
        // Long-running leader work that honours its stop token.
        const auto until = std::chrono::steady_clock::now() + 5s;
        while (!st.stop_requested() && std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(2ms);
        if (st.stop_requested()) {
            leader_when_stopped = e.is_leader();
            saw_stop = true;
        }
    });
    e.start();
    for (int i = 0; i < 300 && !started; ++i) std::this_thread::sleep_for(10ms);
    ASSERT_TRUE(started);
    // Another process takes the selector: the next round reports `lost`.
    const auto key = make_election_keys(default_prefix, "revoke").selector;
    const auto t0 = std::chrono::steady_clock::now();
    srv.command({"HSET", key, "holder", "other", "epoch", "1000"});
    srv.command({"PEXPIRE", key, "10000"});
    for (int i = 0; i < 300 && !saw_stop; ++i) std::this_thread::sleep_for(10ms);
    EXPECT_TRUE(saw_stop);
    EXPECT_FALSE(leader_when_stopped);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
    const auto runs = t.runs();
    std::this_thread::sleep_for(200ms);
    EXPECT_EQ(t.runs(), runs);  // not leader: no new runs
}

// The task's stop must not depend on user slots of `revoked`: a throwing slot connected
// before the task skips the later slots of that signal invocation (Boost.Signals2).
TEST(LeaderTask, M3_ThrowingRevokedSlotDoesNotSkipStop) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    std::atomic<bool> started{false}, saw_stop{false};
    leader_elector e(pool, "m3_throw", opts("me", 600ms));
    const auto throwing = e.on_revoked(
        [](revoke_reason) { throw std::runtime_error("the user's metrics call failed"); });
    leader_task t(e, 10ms, [&](std::uint64_t, std::stop_token st) {
        started = true;
        const auto until = std::chrono::steady_clock::now() + 5s;
        while (!st.stop_requested() && std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(2ms);
        if (st.stop_requested()) saw_stop = true;
    });
    e.start();
    for (int i = 0; i < 300 && !started; ++i) std::this_thread::sleep_for(10ms);
    ASSERT_TRUE(started);
    // Another process takes the selector: the next round revokes (`lost`).
    const auto key = make_election_keys(default_prefix, "m3_throw").selector;
    srv.command({"HSET", key, "holder", "other", "epoch", "1000"});
    srv.command({"PEXPIRE", key, "10000"});
    for (int i = 0; i < 300 && !saw_stop && !e.is_leader(); ++i) std::this_thread::sleep_for(10ms);
    for (int i = 0; i < 100 && !saw_stop; ++i) std::this_thread::sleep_for(10ms);
    EXPECT_FALSE(e.is_leader());
    EXPECT_TRUE(saw_stop) << "the revocation never reached the task's stop token";
    t.stop();
    e.stop();
}

TEST(LeaderTask, StopTriggersTheTokenAndJoins) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    leader_elector e(pool, "stop", opts("me", 600ms));
    std::atomic<bool> started{false};
    auto t = std::make_unique<leader_task>(e, 10ms, [&](std::uint64_t, std::stop_token st) {
        started = true;
        while (!st.stop_requested()) std::this_thread::sleep_for(2ms);
    });
    e.start();
    for (int i = 0; i < 300 && !started; ++i) std::this_thread::sleep_for(10ms);
    ASSERT_TRUE(started);
    t.reset();  // would hang if the token were not triggered
    SUCCEED();
}

// C8: milliseconds::max() as the period means "forever" (saturated), not an overflowed wait
// that returns at once and spins.
TEST(LeaderTask, C8_MaxPeriodWaitsForeverAndStopStillJoins) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    leader_elector e(pool, "c8", opts("me", 600ms));
    e.start();
    for (int i = 0; i < 300 && !e.is_leader(); ++i) std::this_thread::sleep_for(10ms);
    ASSERT_TRUE(e.is_leader());
    leader_task t(e, std::chrono::milliseconds::max(), [](std::uint64_t, std::stop_token) {});
    std::this_thread::sleep_for(300ms);
    EXPECT_EQ(t.runs(), 1u);
    const auto t0 = std::chrono::steady_clock::now();
    t.stop();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
}

TEST(LeaderTask, RejectsBadArguments) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    leader_elector e(pool, "bad", opts("me", 600ms));
    EXPECT_THROW(leader_task(e, 0ms, [](std::uint64_t, std::stop_token) {}), invalid_argument);
    EXPECT_THROW(leader_task(e, 10ms, {}), invalid_argument);
}

// Issue 35: a leader_task owns no thread. Its checks are a steady_timer on the runtime's event
// loop and its work runs on a strand of the callback executor; before, each task had a thread.
TEST(LeaderTaskRuntime, TwentyTasksAddNoThread) {
    local_server srv;
    auto rt = redcoord::runtime::create();  // its own runtime: what runs is this test's alone
    connection_pool pool(srv.endpoint(), {}, rt);
    leader_elector e(pool, "task_threads", opts("me", 600ms));
    e.start();
    ASSERT_TRUE(redcoord::testing::eventually([&] { return e.is_leader(); }, 5s));
    const auto work = [](std::uint64_t, std::stop_token) {};
    std::vector<std::unique_ptr<leader_task>> tasks;
    // The first task brings up what tasks share (the event loop's I/O thread, a callback
    // worker).
    tasks.push_back(std::make_unique<leader_task>(e, 10ms, work));
    ASSERT_TRUE(redcoord::testing::eventually([&] { return tasks[0]->runs() >= 2; }, 5s));
    // The callback executor and the tick workers add a worker while a task waits behind a
    // busy one and drop it when idle (runtime.hpp), whatever the number of objects: count the
    // other threads.
    const auto fixed_threads = [&] {
        return redcoord::testing::process_threads() - rt->callbacks().threads() -
               rt->stats().tick_workers;
    };
    const auto before = fixed_threads();
    for (int i = 1; i <= 20; ++i) tasks.push_back(std::make_unique<leader_task>(e, 10ms, work));
    ASSERT_TRUE(redcoord::testing::eventually(
        [&] {
            return std::all_of(tasks.begin(), tasks.end(), [](auto& t) { return t->runs() >= 3; });
        },
        10s));
    // Read twice over: a worker may start or end between the two counts.
    (void)redcoord::testing::eventually([&] { return fixed_threads() == before; }, 2s);
    const auto with_twenty = fixed_threads();
    std::cout << "[leader_task] threads besides the callback workers: " << before
              << " with 1 task, " << with_twenty << " with 21 (callback workers "
              << rt->callbacks().threads() << ")\n";
    EXPECT_EQ(with_twenty, before);
    tasks.clear();  // each stop() ends its chain; none hangs
    EXPECT_LE(fixed_threads(), before);
}

// Issue 35: each task's work has its own strand of the callback executor, so a task whose
// work blocks delays only its own next runs, never another task's.
TEST(LeaderTaskRuntime, ASlowTaskDelaysOnlyItself) {
    local_server srv;
    auto rt = redcoord::runtime::create();
    connection_pool pool(srv.endpoint(), {}, rt);
    leader_elector e(pool, "task_slow", opts("me", 600ms));
    e.start();
    ASSERT_TRUE(redcoord::testing::eventually([&] { return e.is_leader(); }, 5s));
    std::atomic<bool> blocking{false}, release{false};
    leader_task slow(e, 10ms, [&](std::uint64_t, std::stop_token st) {
        blocking = true;
        while (!release && !st.stop_requested()) std::this_thread::sleep_for(2ms);
    });
    ASSERT_TRUE(redcoord::testing::eventually([&] { return blocking.load(); }, 5s));
    leader_task quick(e, 10ms, [](std::uint64_t, std::stop_token) {});
    // While the slow work holds its worker, the quick task keeps running.
    EXPECT_TRUE(redcoord::testing::eventually([&] { return quick.runs() >= 5; }, 10s))
        << "the quick task ran " << quick.runs() << " times behind the slow one";
    EXPECT_EQ(slow.runs(), 1u);
    release = true;
    EXPECT_TRUE(redcoord::testing::eventually([&] { return slow.runs() >= 2; }, 10s));
}

}  // namespace leader_task_test
