// The runtime's callback thread, without a server: per-strand order, drain and close.
#include <redcoord/core/detail/serial_executor.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

using namespace redcoord::detail;
using namespace std::chrono_literals;

TEST(SerialExecutor, TasksOfOneStrandRunInPostOrderOneAtATime) {
    serial_executor ex;
    strand a(ex), b(ex);
    std::mutex mu;
    std::vector<int> got_a, got_b;
    std::atomic<int> concurrent{0}, max_concurrent{0};
    auto task = [&](std::vector<int>& out, int v) {
        return [&, v] {
            const int now = ++concurrent;
            int m = max_concurrent.load();
            while (now > m && !max_concurrent.compare_exchange_weak(m, now)) {}
            {
                std::lock_guard l(mu);
                out.push_back(v);
            }
            --concurrent;
        };
    };
    std::thread pa([&] {
        for (int i = 0; i < 500; ++i) a.post(task(got_a, i));
    });
    std::thread pb([&] {
        for (int i = 0; i < 500; ++i) b.post(task(got_b, i));
    });
    pa.join();
    pb.join();
    a.drain();
    b.drain();
    std::lock_guard l(mu);
    ASSERT_EQ(got_a.size(), 500u);
    ASSERT_EQ(got_b.size(), 500u);
    for (int i = 0; i < 500; ++i) {
        EXPECT_EQ(got_a[i], i);
        EXPECT_EQ(got_b[i], i);
    }
    EXPECT_EQ(max_concurrent.load(), 1);
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
