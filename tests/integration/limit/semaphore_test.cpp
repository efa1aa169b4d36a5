// semaphore on a real server: N permits, several at once, fencing tokens, waits woken by
// releases (not by polling), leases that end, the watchdog, and a SIGKILLed holder whose
// permits come back after their TTL.

#include <redcoord/core/errors.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/limit/semaphore.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/process.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <future>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::eventually;
using redcoord::testing::local_server;

TEST(Semaphore, HandsOutNPermitsAndNoMore) {
    local_server s;
    connection_pool pool(s.endpoint());
    semaphore sem(pool, "slots", {.permits = 3, .timing = {.ttl = 10s}});
    std::vector<permit> held;
    for (int i = 0; i < 3; ++i) {
        auto p = sem.try_acquire();
        ASSERT_TRUE(p) << i;
        EXPECT_TRUE(p->held());
        EXPECT_FALSE(p->lost());
        held.push_back(std::move(*p));
    }
    EXPECT_FALSE(sem.try_acquire());
    EXPECT_TRUE(held.front().release());
    EXPECT_FALSE(held.front().held());
    EXPECT_TRUE(sem.try_acquire());  // released at once: the permit came back
}

TEST(Semaphore, AcquiresSeveralPermitsAtomically) {
    local_server s;
    connection_pool pool(s.endpoint());
    semaphore sem(pool, "pairs", {.permits = 3, .timing = {.ttl = 10s}});
    auto two = sem.try_acquire(2);
    ASSERT_TRUE(two);
    EXPECT_EQ(two->count(), 2u);
    EXPECT_FALSE(sem.try_acquire(2));  // one free: all or nothing
    EXPECT_EQ(s.command({"ZCARD", make_key(default_prefix, "semaphore", "pairs")}).integer(), 2);
    auto one = sem.try_acquire(1);
    EXPECT_TRUE(one);
    EXPECT_THROW((void)sem.try_acquire(4), invalid_argument);
    EXPECT_THROW((void)sem.try_acquire(0), invalid_argument);
}

TEST(Semaphore, FencingTokensStrictlyIncrease) {
    local_server s;
    connection_pool pool(s.endpoint());
    semaphore sem(pool, "fenced", {.permits = 2, .timing = {.ttl = 10s}});
    std::uint64_t last = 0;
    for (int i = 0; i < 10; ++i) {
        auto p = sem.try_acquire();
        ASSERT_TRUE(p);
        EXPECT_GT(p->fencing_token(), last);
        last = p->fencing_token();
    }
}

TEST(Semaphore, RaiiPermitReleasesOnDestruction) {
    local_server s;
    connection_pool pool(s.endpoint());
    semaphore sem(pool, "scoped", {.permits = 1, .timing = {.ttl = 30s}});
    {
        auto p = sem.try_acquire();
        ASSERT_TRUE(p);
        EXPECT_FALSE(sem.try_acquire());
    }
    EXPECT_TRUE(sem.try_acquire());  // (and that temporary released it again)
    auto p = sem.try_acquire();
    ASSERT_TRUE(p);
    permit moved = std::move(*p);
    EXPECT_FALSE(p->held());
    EXPECT_TRUE(moved.held());
    moved = permit();  // assigning releases what it held
    EXPECT_TRUE(sem.try_acquire());
}

TEST(Semaphore, WaiterIsWokenByAReleaseNotByItsTimer) {
    local_server s;
    connection_pool pool(s.endpoint());
    // Leases of a minute: a waiter that relied on its timer would sleep that long.
    semaphore sem(pool, "woken", {.permits = 1, .timing = {.ttl = 60s}});
    auto held = sem.try_acquire();
    ASSERT_TRUE(held);
    auto waiter = std::async(std::launch::async, [&] { return sem.try_acquire_for(1, 30s); });
    // The waiter is waiting once it has raised the waiting flag.
    ASSERT_TRUE(eventually([&] {
        return s.command({"EXISTS", make_key(default_prefix, "semaphore", "woken", "waiting")})
                   .integer() == 1;
    }));
    const auto released_at = std::chrono::steady_clock::now();
    EXPECT_TRUE(held->release());
    auto got = waiter.get();
    EXPECT_TRUE(got);
    EXPECT_LT(std::chrono::steady_clock::now() - released_at, 20s);  // far below the 60 s lease
}

TEST(Semaphore, ReleasingHolderDoesNotBargeAheadOfAQueuedWaiter) {
    local_server s;
    connection_pool pool(s.endpoint());
    semaphore sem(pool, "nobarge", {.permits = 1, .timing = {.ttl = 30s}});
    auto held = sem.try_acquire();
    ASSERT_TRUE(held);
    auto waiter = std::async(std::launch::async, [&] { return sem.try_acquire_for(1, 20s); });
    const auto queue = make_key(default_prefix, "semaphore", "nobarge", "waiting");
    ASSERT_TRUE(eventually([&] { return s.command({"ZCARD", queue}).integer() == 1; }));
    EXPECT_TRUE(held->release());
    // At once, before the woken waiter can ask: the free permit is the waiter's.
    EXPECT_FALSE(sem.try_acquire());
    EXPECT_TRUE(waiter.get());
    EXPECT_EQ(s.command({"EXISTS", queue}).integer(), 0);  // it left the queue with its permit
}

TEST(Semaphore, TimedWaitGivesUp) {
    local_server s;
    connection_pool pool(s.endpoint());
    semaphore sem(pool, "busy", {.permits = 1, .timing = {.ttl = 30s}});
    auto held = sem.try_acquire();
    ASSERT_TRUE(held);
    EXPECT_FALSE(sem.try_acquire_for(1, 200ms));
    EXPECT_FALSE(sem.try_acquire_until(1, std::chrono::system_clock::now() + 100ms));
    // A wait that gave up left the queue: newcomers are not held back by it.
    EXPECT_EQ(
        s.command({"ZCARD", make_key(default_prefix, "semaphore", "busy", "waiting")}).integer(),
        0);
}

TEST(Semaphore, UnextendedLeaseEndsAndItsPermitComesBack) {
    local_server s;
    connection_pool pool(s.endpoint());
    semaphore sem(pool, "short", {.permits = 1, .timing = {.ttl = 300ms}});
    auto held = sem.try_acquire();
    ASSERT_TRUE(held);
    EXPECT_FALSE(sem.try_acquire());
    auto next = sem.try_acquire_for(1, 10s);  // sleeps until the lease ends
    ASSERT_TRUE(next);
    EXPECT_TRUE(held->lost());
    EXPECT_FALSE(held->extend());   // the lease had ended: lost
    EXPECT_FALSE(held->release());  // nothing of it was left to release
    EXPECT_GT(next->fencing_token(), 0u);
}

TEST(Semaphore, ExtendKeepsThePermit) {
    local_server s;
    connection_pool pool(s.endpoint());
    semaphore sem(pool, "kept", {.permits = 1, .timing = {.ttl = 400ms}});
    auto held = sem.try_acquire();
    ASSERT_TRUE(held);
    for (int i = 0; i < 4; ++i) {
        std::this_thread::sleep_for(150ms);
        ASSERT_TRUE(held->extend()) << i;
    }
    EXPECT_FALSE(sem.try_acquire());
    EXPECT_TRUE(held->release());
}

TEST(Semaphore, WatchdogKeepsThePermitPastItsTtl) {
    local_server s;
    connection_pool pool(s.endpoint());
    semaphore sem(pool, "watched", {.permits = 1, .timing = {.ttl = 300ms}, .watchdog = true});
    auto held = sem.try_acquire();
    ASSERT_TRUE(held);
    std::this_thread::sleep_for(1s);
    EXPECT_FALSE(held->lost());
    EXPECT_FALSE(sem.try_acquire());
    EXPECT_TRUE(held->release());
    EXPECT_TRUE(sem.try_acquire());
}

TEST(Semaphore, LeasesOfDifferentHoldersEndIndependently) {
    local_server s;
    connection_pool pool(s.endpoint());
    semaphore brief(pool, "mixed", {.permits = 2, .timing = {.ttl = 200ms}});
    semaphore lasting(pool, "mixed", {.permits = 2, .timing = {.ttl = 30s}});
    auto a = brief.try_acquire();
    auto b = lasting.try_acquire();
    ASSERT_TRUE(a && b);
    EXPECT_FALSE(lasting.try_acquire());
    auto c = lasting.try_acquire_for(1, 10s);  // a's lease ends, b's stays
    ASSERT_TRUE(c);
    EXPECT_FALSE(lasting.try_acquire());
    EXPECT_GT(s.command({"PTTL", make_key(default_prefix, "semaphore", "mixed")}).integer(), 20000);
}

TEST(Semaphore, ThreadsNeverHoldMoreThanN) {
    local_server s;
    connection_pool pool(s.endpoint());
    semaphore sem(pool, "crowd", {.permits = 3, .timing = {.ttl = 10s}});
    std::atomic<int> inside{0}, most{0}, done{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < 8; ++t)
        ts.emplace_back([&] {
            for (int i = 0; i < 15; ++i) {
                auto p = sem.try_acquire_for(1, 20s);
                ASSERT_TRUE(p);
                const int now = ++inside;
                int m = most.load();
                while (now > m && !most.compare_exchange_weak(m, now)) {}
                std::this_thread::sleep_for(1ms);
                --inside;
                EXPECT_TRUE(p->release());
                ++done;
            }
        });
    for (auto& t : ts) t.join();
    EXPECT_EQ(done.load(), 8 * 15);
    EXPECT_LE(most.load(), 3);
}

namespace {

// Starts a child that takes `n` permits and dies holding them; returns once it is dead.
void kill_a_holder(local_server& s, const std::string& name, std::uint64_t permits,
                   std::chrono::milliseconds ttl, std::uint64_t n, std::chrono::milliseconds hold,
                   const char* mode) {
    redcoord::testing::process child({SEMAPHORE_KILL_CHILD_PATH, s.url(), name,
                                      std::to_string(permits), std::to_string(ttl.count()),
                                      std::to_string(n), std::to_string(hold.count()), mode});
    const auto status = child.wait_for(30s);
    ASSERT_TRUE(status.has_value()) << "the child did not end";
    ASSERT_EQ(*status, 128 + SIGKILL) << "the child did not reach its SIGKILL";
}

}  // namespace

TEST(Semaphore, KilledHoldersPermitsComeBackAfterTheTtl) {
    local_server s;
    connection_pool pool(s.endpoint());
    semaphore sem(pool, "killed", {.permits = 2, .timing = {.ttl = 1500ms}});
    kill_a_holder(s, "killed", 2, 1500ms, 2, 0ms, "plain");
    const auto died = std::chrono::steady_clock::now();
    EXPECT_FALSE(sem.try_acquire());  // the dead holder's leases still run
    auto back = sem.try_acquire_for(2, 20s);
    ASSERT_TRUE(back);
    EXPECT_GT(std::chrono::steady_clock::now() - died, 200ms);  // not before its lease ended
}

TEST(Semaphore, KilledHolderWithWatchdogStopsBeingExtended) {
    local_server s;
    connection_pool pool(s.endpoint());
    semaphore sem(pool, "watched-killed", {.permits = 1, .timing = {.ttl = 600ms}});
    // The child holds for three TTLs (its watchdog extends), then dies.
    kill_a_holder(s, "watched-killed", 1, 600ms, 1, 1800ms, "watchdog");
    EXPECT_FALSE(sem.try_acquire());
    EXPECT_TRUE(sem.try_acquire_for(1, 20s));
}
