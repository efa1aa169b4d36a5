// Busy locks: several threads, each with its own lock object and pool (as separate processes
// would have), looping acquire / critical section / unlock. Mutual exclusion must hold, no
// contender starves (bounded unfairness: a holder that re-acquires at once hands over after
// its turn), and waiters must not turn the releases of a busy lock into PUBLISHes (they sleep
// through the holder's turn).

#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/lock/redlock.hpp>
#include <redcoord/testing/local_server.hpp>

#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>

using namespace std::chrono_literals;
using redcoord::testing::local_server;

namespace {

struct outcome {
    std::uint64_t sections = 0;
    bool overlapped = false;
    std::vector<std::uint64_t> per_thread;
    // The smallest thread's sections over an even share.
    [[nodiscard]] double min_share() const {
        if (sections == 0) return 0;
        const auto least = *std::min_element(per_thread.begin(), per_thread.end());
        return static_cast<double>(least) * static_cast<double>(per_thread.size()) /
               static_cast<double>(sections);
    }
};

// Runs `threads` loops for `run`; make_lock(i) builds thread i's own lock object.
template <class MakeLock>
outcome contend(int threads, std::chrono::milliseconds run, MakeLock make_lock) {
    std::atomic<bool> stop{false}, overlapped{false};
    std::atomic<int> inside{0};
    std::atomic<std::uint64_t> sections{0};
    std::vector<std::uint64_t> mine(static_cast<std::size_t>(threads), 0);
    std::vector<std::thread> ts;
    for (int i = 0; i < threads; ++i)
        ts.emplace_back([&, i] {
            auto lock = make_lock(i);
            std::uint64_t n = 0;
            while (!stop) {
                if (!lock->acquire(100ms)) continue;  // bounded, so `stop` is seen
                if (inside.fetch_add(1) != 0) overlapped = true;
                ++sections;
                ++n;
                inside.fetch_sub(1);
                lock->unlock();
            }
            mine[static_cast<std::size_t>(i)] = n;
        });
    std::this_thread::sleep_for(run);
    stop = true;
    for (auto& t : ts) t.join();
    return {sections.load(), overlapped.load(), mine};
}

TEST(BusyLock, SingleInstanceWaitersDoNotPublishOnEveryRelease) {
    local_server s;
    std::vector<std::unique_ptr<redcoord::connection_pool>> pools;
    for (int i = 0; i < 4; ++i)
        pools.push_back(std::make_unique<redcoord::connection_pool>(s.endpoint()));
    const auto publishes0 = s.command_calls("publish");
    const auto r = contend(4, 1500ms, [&](int i) {
        return std::make_unique<redcoord::distributed_lock>(
            *pools[static_cast<std::size_t>(i)], "busy",
            redcoord::lock_options{.timing = {.ttl = 10s}});
    });
    const auto publishes = s.command_calls("publish") - publishes0;
    EXPECT_FALSE(r.overlapped);
    ASSERT_GT(r.sections, 100u);
    // Marking waiters would make about every other release publish; backing-off waiters
    // mark only when they start waiting or the lock goes quiet. How often that happens is a
    // matter of the clients' speed against the back-off's fixed times, which a sanitizer
    // build changes several-fold: there only the safety checks around it apply.
    if (!redcoord::testing::sanitized_build())
        EXPECT_LT(publishes * 10, static_cast<std::int64_t>(r.sections))
            << publishes << " publishes, " << r.sections << " sections";
    // Nobody starves: each of the four got at least a quarter of an even share (the issue's
    // run gave one process nearly everything; the goal measured by the bench is one half).
    EXPECT_GE(r.min_share(), 0.25) << ::testing::PrintToString(r.per_thread);
}

// With defer_release a holder's loop re-locks in place and a release happens at hand-overs
// only, so publishes are rare; without it (the default since issue 33, F9) every section
// releases, and a waiter that asked for a notice on a node makes that node's release publish:
// still well under every release (measured 0.4 of the node releases).
class BusyRedlock : public ::testing::TestWithParam<bool> {};

TEST_P(BusyRedlock, RedlockWaitersDoNotPublishOnEveryRelease) {
    const bool defer = GetParam();
    auto servers = redcoord::testing::start_masters(3);
    std::vector<std::vector<std::unique_ptr<redcoord::connection_pool>>> pools(4);
    for (auto& mine : pools)
        for (auto& srv : servers)
            mine.push_back(std::make_unique<redcoord::connection_pool>(srv->endpoint()));
    auto publishes = [&] {
        std::int64_t n = 0;
        for (auto& srv : servers) n += srv->command_calls("publish");
        return n;
    };
    const auto publishes0 = publishes();
    const auto r = contend(4, 1500ms, [&](int i) {
        std::vector<redcoord::connection_pool*> nodes;
        for (auto& p : pools[static_cast<std::size_t>(i)]) nodes.push_back(p.get());
        // A generous node_timeout: this test is about publishes, and on a loaded 2-core box
        // four fresh objects connecting at once can take longer than the default 50 ms; a
        // wait that ends on such a round throws quorum_unreachable, by design.
        return std::make_unique<redcoord::redlock>(
            nodes, "busy",
            redcoord::redlock_options{
                .timing = {.ttl = 10s}, .node_timeout = 500ms, .defer_release = defer});
    });
    const auto published = publishes() - publishes0;  // one per node and marked release
    EXPECT_FALSE(r.overlapped);
    ASSERT_GT(r.sections, 100u);
    const auto node_releases = static_cast<std::int64_t>(r.sections) * 3;
    // The publish ratio depends on the clients' speed (see the test above).
    if (!redcoord::testing::sanitized_build()) {
        EXPECT_LT(published * (defer ? 10 : 2), node_releases)
            << published << " publishes over 3 nodes, " << r.sections << " sections";
    }
    EXPECT_GE(r.min_share(), 0.25) << ::testing::PrintToString(r.per_thread);
}

INSTANTIATE_TEST_SUITE_P(BusyLock, BusyRedlock, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) {
                             return i.param ? "DeferRelease" : "Plain";
                         });

TEST(BusyLock, AHolderThatRelocksAtOnceHandsOverAfterItsTurn) {
    // One holder loops lock / unlock with no pause at all; another lock() must get in. With
    // handoff_after = 10 ms it does within about a turn; the bound here only keeps a starving
    // lock from passing (before bounded unfairness it often waited for the whole run).
    local_server s;
    redcoord::connection_pool pa(s.endpoint()), pb(s.endpoint());
    redcoord::distributed_lock a(pa, "relock", {.timing = {.ttl = 10s}}),
        b(pb, "relock", {.timing = {.ttl = 10s}});
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> a_sections{0};
    std::thread holder([&] {
        while (!stop) {
            a.lock();
            ++a_sections;
            a.unlock();
        }
    });
    while (a_sections < 100) std::this_thread::sleep_for(1ms);
    for (int i = 0; i < 5; ++i) {  // five hand-overs in a row
        EXPECT_TRUE(b.acquire(3s)) << "hand-over " << i;
        std::this_thread::sleep_for(1ms);
        b.unlock();
        std::this_thread::sleep_for(30ms);  // let the holder stream again past its turn
    }
    stop = true;
    holder.join();
}

TEST(BusyLock, AWaiterThatDiedHoldsTheLockUpOnlyBriefly) {
    // A waiter registers (a refused attempt names it in the waiting key) and dies: the holder's
    // next turn ends with nobody to take the lock. It yields for at most the grace (50 ms),
    // then goes on: its lock() calls keep succeeding.
    local_server s;
    redcoord::connection_pool pa(s.endpoint()), pb(s.endpoint());
    redcoord::distributed_lock a(pa, "ghost", {.timing = {.ttl = 10s}});
    {
        redcoord::distributed_lock ghost(pb, "ghost", {.timing = {.ttl = 10s}});
        a.lock();
        EXPECT_FALSE(ghost.acquire(1ms));  // refused with a wait: registered as a waiter
        a.unlock();
    }  // the ghost never comes back
    const auto t0 = std::chrono::steady_clock::now();
    std::uint64_t n = 0;
    while (std::chrono::steady_clock::now() - t0 < 300ms) {
        ASSERT_TRUE(a.acquire(2s)) << "after " << n << " sections";
        ++n;
        a.unlock();
    }
    EXPECT_GT(n, 10u);
}

}  // namespace
