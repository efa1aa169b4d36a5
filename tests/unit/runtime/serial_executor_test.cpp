// The runtime's callback executor, without a server: per-strand order, drain, close, and
// workers added only for strands that would wait behind a busy one.
#include <redcoord/core/detail/serial_executor.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

using namespace redcoord::detail;
using namespace std::chrono_literals;

TEST(SerialExecutor, TasksOfOneStrandRunInPostOrderOneAtATime) {
    serial_executor ex;
    strand a(ex), b(ex);
    // One counter per strand: two strands may run at once on two workers (that is the point
    // of adding a worker); one strand's tasks never overlap.
    struct tally {
        std::vector<int> got;
        std::atomic<int> concurrent{0}, max_concurrent{0};
    };
    std::mutex mu;
    tally ta, tb;
    auto task = [&](tally& t, int v) {
        return [&, v] {
            const int now = ++t.concurrent;
            int m = t.max_concurrent.load();
            while (now > m && !t.max_concurrent.compare_exchange_weak(m, now)) {}
            {
                std::lock_guard l(mu);
                t.got.push_back(v);
            }
            --t.concurrent;
        };
    };
    std::thread pa([&] {
        for (int i = 0; i < 500; ++i) a.post(task(ta, i));
    });
    std::thread pb([&] {
        for (int i = 0; i < 500; ++i) b.post(task(tb, i));
    });
    pa.join();
    pb.join();
    a.drain();
    b.drain();
    std::lock_guard l(mu);
    ASSERT_EQ(ta.got.size(), 500u);
    ASSERT_EQ(tb.got.size(), 500u);
    for (int i = 0; i < 500; ++i) {
        EXPECT_EQ(ta.got[i], i);
        EXPECT_EQ(tb.got[i], i);
    }
    EXPECT_EQ(ta.max_concurrent.load(), 1);
    EXPECT_EQ(tb.max_concurrent.load(), 1);
}

TEST(SerialExecutor, CloseDropsPendingTasksAndWaitsForTheRunningOne) {
    serial_executor ex;
    strand s(ex);
    std::atomic<bool> running{false}, finished{false};
    std::atomic<int> later{0};
    s.post([&] {
        running = true;
        std::this_thread::sleep_for(50ms);
        finished = true;
    });
    for (int i = 0; i < 10; ++i) s.post([&] { ++later; });
    while (!running) std::this_thread::yield();
    s.close();
    EXPECT_TRUE(finished.load());
    s.post([&] { ++later; });  // ignored after close
    strand other(ex);
    std::atomic<bool> other_ran{false};
    other.post([&] { other_ran = true; });
    other.drain();
    EXPECT_TRUE(other_ran.load());
    EXPECT_EQ(later.load(), 0);
}

TEST(SerialExecutor, AThrowingTaskDoesNotStopTheThread) {
    serial_executor ex;
    strand s(ex);
    std::atomic<bool> ran{false};
    s.post([] { throw std::runtime_error("callback failed"); });
    s.post([&] { ran = true; });
    s.drain();
    EXPECT_TRUE(ran.load());
}

TEST(SerialExecutor, ATaskMayCloseAndDrainItsOwnStrand) {
    serial_executor ex;
    auto s = std::make_unique<strand>(ex);
    std::atomic<bool> done{false}, posted{false};
    s->post([&] {
        while (!posted) std::this_thread::yield();  // `s` is not the test's to touch after this
        s->drain();                                 // on the executor thread: returns at once
        s.reset();                                  // closes from inside: must not wait for itself
        done = true;
    });
    posted = true;
    while (!done) std::this_thread::sleep_for(1ms);
    EXPECT_TRUE(ex.on_executor_thread() == false);
}

// Issue 35: one strand's blocked task delays only that strand; the others run on another
// worker, and a worker is added only when every worker is busy.
TEST(SerialExecutor, ABlockedStrandDelaysOnlyItself) {
    serial_executor ex;
    strand slow(ex), fast(ex);
    std::atomic<bool> release{false}, slow_later{false};
    std::atomic<int> fast_ran{0};
    slow.post([&] {
        while (!release) std::this_thread::sleep_for(1ms);
    });
    slow.post([&] { slow_later = true; });
    for (int i = 0; i < 100; ++i) fast.post([&] { ++fast_ran; });
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (fast_ran.load() < 100 && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(1ms);
    EXPECT_EQ(fast_ran.load(), 100) << "another strand's blocked task held these up";
    EXPECT_FALSE(slow_later.load()) << "a strand's tasks ran out of order";
    EXPECT_LE(ex.threads_started(), 2u);
    release = true;
    slow.drain();
    EXPECT_TRUE(slow_later.load());
}

TEST(SerialExecutor, QuickTasksOfManyStrandsKeepOneWorker) {
    serial_executor ex;
    std::vector<std::unique_ptr<strand>> strands;
    for (int i = 0; i < 50; ++i) strands.push_back(std::make_unique<strand>(ex));
    std::atomic<int> ran{0};
    for (int round = 0; round < 20; ++round) {
        for (auto& s : strands) s->post([&] { ++ran; });
        for (auto& s : strands) s->drain();
    }
    EXPECT_EQ(ran.load(), 1000);
    // A worker joins in only when a task waited 10 ms behind a busy one, which a slow machine
    // may make happen now and then; never one per strand.
    EXPECT_LE(ex.threads_started(), 8u);
}

TEST(SerialExecutor, WorkersAreBoundedAndExtraOnesRetireWhenIdle) {
    serial_executor ex({.max_threads = 3, .idle_retire = 100ms});
    std::vector<std::unique_ptr<strand>> strands;
    std::atomic<bool> release{false};
    std::atomic<int> ran{0};
    for (int i = 0; i < 6; ++i) {
        strands.push_back(std::make_unique<strand>(ex));
        strands.back()->post([&] {
            while (!release) std::this_thread::sleep_for(1ms);
            ++ran;
        });
    }
    const auto grown_by = std::chrono::steady_clock::now() + 10s;
    while (ex.threads_started() < 3 && std::chrono::steady_clock::now() < grown_by)
        std::this_thread::sleep_for(5ms);
    std::this_thread::sleep_for(100ms);  // time for a fourth, which must not come
    EXPECT_EQ(ex.threads_started(), 3u);
    EXPECT_EQ(ex.threads(), 3u);
    release = true;
    for (auto& s : strands) s->drain();
    EXPECT_EQ(ran.load(), 6);
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (ex.threads() > 1 && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(10ms);
    EXPECT_EQ(ex.threads(), 1u);
}

// Extra workers also end while one strand posts a quick task now and then: the idle workers
// take turns at those tasks, and none of them must count that as being needed.
TEST(SerialExecutor, ExtraWorkersRetireWhileAStrandPostsNowAndThen) {
    serial_executor ex({.max_threads = 3, .idle_retire = 200ms});
    std::vector<std::unique_ptr<strand>> strands;
    std::atomic<bool> release{false};
    for (int i = 0; i < 3; ++i) {
        strands.push_back(std::make_unique<strand>(ex));
        strands.back()->post([&] {
            while (!release) std::this_thread::sleep_for(1ms);
        });
    }
    const auto grown_by = std::chrono::steady_clock::now() + 10s;
    while (ex.threads() < 3 && std::chrono::steady_clock::now() < grown_by)
        std::this_thread::sleep_for(5ms);
    ASSERT_EQ(ex.threads(), 3u);
    release = true;
    for (auto& s : strands) s->drain();
    strand ticking(ex);
    std::atomic<int> ran{0};
    const auto until = std::chrono::steady_clock::now() + 3s;
    while (ex.threads() > 1 && std::chrono::steady_clock::now() < until) {
        ticking.post([&] { ++ran; });
        std::this_thread::sleep_for(30ms);
    }
    EXPECT_EQ(ex.threads(), 1u) << "the idle workers kept each other alive";
    ticking.drain();
    EXPECT_GT(ran.load(), 0);
}
