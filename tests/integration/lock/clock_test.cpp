// Issue 35, item 6: the lock drivers decide by their runtime's clock, so a test advances it
// instead of sleeping through a TTL. Each test uses long TTLs (a minute): without the clock
// seam its watchdog or loss notice would be a minute away, and the test would fail its
// few-second waits.

#include "master_nodes.hpp"

#include <redcoord/core/pool.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/lock/fair_lock.hpp>
#include <redcoord/lock/redlock.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/runtime_server.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::eventually;
using redcoord::testing::local_server;
using redcoord::testing::runtime_server;

namespace {

long long pttl(const local_server& s, const std::string& key) {
    return s.command({"PTTL", key}).integer();
}

// The server's side of "time has passed": the key's TTL cut to 30 s of its 60.
void age_key(const local_server& s, const std::string& key) {
    ASSERT_EQ(s.command({"PEXPIRE", key, "30000"}).integer(), 1);
}

// `lock` (held, with a watchdog and a minute's TTL) on `servers`: each key aged to 30 s, then
// the clock advanced by `by`, which reaches a third of the TTL since the acquisition. The
// watchdog must set every key's TTL back to about a minute at once, and count the new
// validity from the advanced clock (ttl - elapsed - drift from the extension's start).
template <class Lock>
void expect_extended_by_the_clock(Lock& lock, runtime& rt,
                                  const std::vector<const local_server*>& servers,
                                  std::chrono::milliseconds by) {
    const auto first_until = lock.current()->valid_until;
    for (const auto* s : servers) age_key(*s, lock.key());
    rt.clock().advance(by);
    for (const auto* s : servers)
        ASSERT_TRUE(eventually([&] { return pttl(*s, lock.key()) > 50000; }, 5s))
            << "PTTL " << pttl(*s, lock.key());
    ASSERT_TRUE(eventually([&] { return lock.current()->valid_until > first_until; }, 5s));
    EXPECT_GE(lock.current()->valid_until, first_until + 20s);
    EXPECT_FALSE(lock.lost());
}

// A lock of a minute's TTL that counts its loss notices.
struct noticed_lock {
    distributed_lock lock;
    std::atomic<int> told{0};
    boost::signals2::scoped_connection notices;
    noticed_lock(connection_pool& pool, const std::string& name, bool watchdog)
        : lock(pool, name, {.timing = {.ttl = 60s}, .watchdog = watchdog}),
          notices(lock.on_lost([this](const std::string&) { ++told; })) {}

    // Advances `clock` by `by`, then checks a moment later that the holding was neither lost
    // nor reported lost.
    void expect_held_after(runtime_clock& clock, runtime_clock::duration by) {
        clock.advance(by);
        std::this_thread::sleep_for(200ms);
        EXPECT_EQ(told.load(), 0);
        EXPECT_FALSE(lock.lost());
    }
};

}  // namespace

TEST(LockClock, TheWatchdogExtendsOnceTheClockReachesAThirdOfTheTtl) {
    runtime_server s;
    auto& [srv, rt, pool] = s;
    distributed_lock lock(pool, "clock-watchdog", {.timing = {.ttl = 60s}, .watchdog = true});
    ASSERT_TRUE(lock.try_lock());
    const auto first_until = lock.current()->valid_until;
    age_key(srv, lock.key());
    // Not yet a third of the TTL by the clock: no extension.
    rt->clock().advance(10s);
    std::this_thread::sleep_for(200ms);
    EXPECT_LE(pttl(srv, lock.key()), 30000);
    EXPECT_EQ(lock.current()->valid_until, first_until);
    // A third of it: the watchdog extends to the full TTL at once.
    expect_extended_by_the_clock(lock, *rt, {&srv}, 10s + 1ms);
    lock.unlock();
    EXPECT_TRUE(srv.command({"EXISTS", lock.key()}).integer() == 0);
}

TEST(LockClock, AHolderCutOffFromItsServerIsToldOfTheLossBeforeTheKeyExpires) {
    runtime_server s(200ms);  // the watchdog's extension against the stopped server
    auto& [srv, rt, pool] = s;
    noticed_lock n(pool, "clock-loss", true);
    auto [lock, told] = std::tie(n.lock, n.told);  // references to n's
    ASSERT_TRUE(lock.try_lock());
    srv.pause();
    const auto paused_at = std::chrono::steady_clock::now();
    // Past the whole validity by the clock: the extensions cannot be confirmed, so the holder
    // gives the lock up, a minute before Redis would let the key go.
    rt->clock().advance(61s);
    ASSERT_TRUE(eventually([&] { return told.load() == 1; }, 5s));
    EXPECT_TRUE(lock.lost());
    srv.resume();
    // The key is still there: the holder stopped trusting it first (the safe order).
    EXPECT_GT(pttl(srv, lock.key()), 50000);
    EXPECT_LT(std::chrono::steady_clock::now() - paused_at, 10s);
}

TEST(LockClock, WithoutAWatchdogTheLossNoticeComesAtTheValidityEndByTheClock) {
    runtime_server s;
    auto& [srv, rt, pool] = s;
    noticed_lock n(pool, "clock-notice", false);
    auto [lock, told] = std::tie(n.lock, n.told);  // references to n's
    ASSERT_TRUE(lock.try_lock());
    n.expect_held_after(rt->clock(), 50s);
    rt->clock().advance(10s);
    ASSERT_TRUE(eventually([&] { return told.load() == 1; }, 5s));
    EXPECT_TRUE(lock.lost());
    EXPECT_GT(pttl(srv, lock.key()), 0);  // Redis's clock did not move
}

TEST(LockClock, AnotherRuntimesClockMovesNothingOfThisLock) {
    runtime_server s;
    auto other = runtime::create();
    noticed_lock n(s.pool, "clock-other", false);
    ASSERT_TRUE(n.lock.try_lock());
    n.expect_held_after(other->clock(), 2min);
    n.lock.unlock();
}

TEST(LockClock, RedlocksWatchdogExtendsOnEveryNodeWhenTheClockAdvances) {
    auto rt = runtime::create();
    redcoord::testing::master_nodes m(3, rt);
    redlock lock(m.nodes, "clock-redlock", {.timing = {.ttl = 60s}, .watchdog = true});
    ASSERT_TRUE(lock.try_lock());
    std::vector<const local_server*> servers;
    for (const auto& srv : m.servers) servers.push_back(srv.get());
    expect_extended_by_the_clock(lock, *rt, servers, 20s + 1ms);
    lock.unlock();
}

TEST(LockClock, AFairLocksWatchdogExtendsWhenTheClockAdvances) {
    runtime_server s;
    auto& [srv, rt, pool] = s;
    fair_lock lock(pool, "clock-fair", {.timing = {.ttl = 60s}, .watchdog = true});
    ASSERT_TRUE(lock.try_lock());
    expect_extended_by_the_clock(lock, *rt, {&srv}, 20s + 1ms);
    lock.unlock();
}
