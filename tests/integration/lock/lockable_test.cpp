// Both locks meet Lockable / TimedLockable: the standard RAII wrappers and
// std::condition_variable_any work with them.
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/lock/redlock.hpp>
#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::local_server;

namespace {
struct three {
    std::vector<std::unique_ptr<local_server>> servers = redcoord::testing::start_masters(3);
    std::vector<std::unique_ptr<connection_pool>> pools;
    std::vector<connection_pool*> nodes;
    three() {
        for (auto& s : servers) {
            pools.push_back(std::make_unique<connection_pool>(s->endpoint()));
            nodes.push_back(pools.back().get());
        }
    }
};

template <class Lock>
void unique_lock_and_timed(Lock& a, Lock& b) {
    {
        std::unique_lock guard(a);
        EXPECT_TRUE(guard.owns_lock());
        EXPECT_TRUE(a.held());
        std::unique_lock other(b, std::try_to_lock);
        EXPECT_FALSE(other.owns_lock());
        std::unique_lock timed(b, std::defer_lock);
        const auto t0 = std::chrono::steady_clock::now();
        EXPECT_FALSE(timed.try_lock_for(150ms));
        EXPECT_GE(std::chrono::steady_clock::now() - t0, 140ms);
        EXPECT_FALSE(timed.try_lock_until(std::chrono::system_clock::now() + 50ms));  // any clock
    }
    EXPECT_FALSE(a.held());
    std::unique_lock after(b, std::try_to_lock);
    EXPECT_TRUE(after.owns_lock());
}

template <class Lock>
void scoped_lock_two(Lock& x1, Lock& y1, Lock& x2) {
    {
        std::scoped_lock both(x1, y1);  // std::lock: lock + try_lock with back-off
        EXPECT_TRUE(x1.held());
        EXPECT_TRUE(y1.held());
        EXPECT_FALSE(x2.try_lock());
    }
    EXPECT_FALSE(x1.held());
    EXPECT_FALSE(y1.held());
    EXPECT_TRUE(x2.try_lock());
    x2.unlock();
}

template <class Lock>
void condition_variable_any_handshake(Lock& m) {
    std::condition_variable_any cv;
    bool ready = false;  // guarded by the distributed lock (one object shared by two threads)
    std::thread producer([&] {
        std::this_thread::sleep_for(100ms);
        std::unique_lock g(m);
        ready = true;
        cv.notify_all();
    });
    {
        std::unique_lock g(m);
        EXPECT_TRUE(cv.wait_for(g, 10s, [&] { return ready; }));
        EXPECT_TRUE(m.held());
    }
    producer.join();
    EXPECT_FALSE(m.held());
}
}  // namespace

TEST(Lockable, DistributedLockWithUniqueLock) {
    local_server s;
    connection_pool p(s.endpoint());
    distributed_lock a(p, "u"), b(p, "u");
    unique_lock_and_timed(a, b);
}

TEST(Lockable, DistributedLockWithScopedLock) {
    local_server s;
    connection_pool p(s.endpoint());
    distributed_lock x1(p, "x"), y1(p, "y"), x2(p, "x");
    scoped_lock_two(x1, y1, x2);
}

TEST(Lockable, DistributedLockWithConditionVariableAny) {
    local_server s;
    connection_pool p(s.endpoint());
    distributed_lock m(p, "cv");
    condition_variable_any_handshake(m);
}

TEST(Lockable, RedlockWithUniqueLock) {
    three t;
    redlock a(t.nodes, "u"), b(t.nodes, "u");
    unique_lock_and_timed(a, b);
}

TEST(Lockable, RedlockWithScopedLock) {
    three t;
    redlock x1(t.nodes, "x"), y1(t.nodes, "y"), x2(t.nodes, "x");
    scoped_lock_two(x1, y1, x2);
}

TEST(Lockable, RedlockWithConditionVariableAny) {
    three t;
    redlock m(t.nodes, "cv");
    condition_variable_any_handshake(m);
}

TEST(Lockable, ThreadsSharingOneObjectAndObjectsSharingOneResourceExcludeEachOther) {
    local_server s;
    connection_pool p(s.endpoint());
    distributed_lock shared(p, "count");
    distributed_lock own1(p, "count"), own2(p, "count");
    // Atomics only so TSan, which cannot see the ordering Redis provides, stays quiet.
    std::atomic<int> in_section{0}, overlaps{0}, total{0};
    auto work = [&](distributed_lock& l) {
        for (int i = 0; i < 40; ++i) {
            std::lock_guard g(l);
            if (++in_section != 1) ++overlaps;
            ++total;
            std::this_thread::sleep_for(200us);
            --in_section;
        }
    };
    std::thread t1(work, std::ref(shared)), t2(work, std::ref(shared)), t3(work, std::ref(own1)),
        t4(work, std::ref(own2));
    t1.join();
    t2.join();
    t3.join();
    t4.join();
    EXPECT_EQ(overlaps, 0);
    EXPECT_EQ(total, 160);
}
