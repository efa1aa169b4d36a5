// Regression tests for the lock findings of the 2026-11-23 review (lock-election.md): each test
// is named after its finding and failed before the fix.
#include <redcoord/core/errors.hpp>
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/lock/redlock.hpp>
#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <limits>
#include <mutex>
#include <set>
#include <thread>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::local_server;
using redcoord::testing::master_and_replica;
using clock_type = std::chrono::steady_clock;

namespace {
struct nodes {
    std::vector<std::unique_ptr<local_server>> servers;
    std::vector<std::unique_ptr<connection_pool>> pools;
    std::vector<connection_pool*> ptrs;
    explicit nodes(int n, pool_options po = {}) : servers(redcoord::testing::start_masters(n)) {
        for (auto& s : servers) {
            pools.push_back(std::make_unique<connection_pool>(s->endpoint(), po));
            ptrs.push_back(pools.back().get());
            (void)pools.back()->command({"PING"});
        }
    }
};

// Runs `enter` on another thread while `holder` holds its lock: `enter` must still be
// blocked after `patience`, and return true once the holder unlocks.
template <class Holder, class Enter>
void expect_waits_for_release(Holder& holder, std::chrono::milliseconds patience, Enter enter) {
    auto entered = std::async(std::launch::async, std::move(enter));
    EXPECT_EQ(entered.wait_for(patience), std::future_status::timeout)
        << "returned while another holds the lock";
    holder.unlock();
    ASSERT_EQ(entered.wait_for(10s), std::future_status::ready);
    EXPECT_TRUE(entered.get());
}
}  // namespace

// C1: lock() ignored nothing: with retry_count set it gave up after that many attempts and
// returned normally, so a lock_guard ran its critical section without the lock.
TEST(Redlock, C1_LockIgnoresRetryCount) {
    nodes n(3);
    redlock holder(n.ptrs, "c1", {.timing = {.ttl = 10s}});
    ASSERT_TRUE(holder.try_lock());

    redlock r(n.ptrs, "c1", {.timing = {.ttl = 10s}, .retry_count = 1, .retry_delay = 1ms});
    expect_waits_for_release(holder, 600ms, [&] {
        std::lock_guard g(r);
        return r.held();
    });
}

// C1, the same audit for the single-instance lock and a timed wait: try_lock_for gives up
// without the lock, lock() does not.
TEST(DistributedLock, C1_LockNeverReturnsWithoutTheLock) {
    local_server s;
    connection_pool pool(s.endpoint());
    distributed_lock holder(pool, "c1", {.timing = {.ttl = 10s}});
    ASSERT_TRUE(holder.try_lock());
    distributed_lock l(pool, "c1", {.timing = {.ttl = 10s}});
    EXPECT_FALSE(l.try_lock_for(50ms));
    expect_waits_for_release(holder, 300ms, [&] {
        std::unique_lock g(l);
        return g.owns_lock() && l.held();
    });
}

// C1 / m3: lock() rides through a server that is briefly down (a condition_variable_any
// re-lock must not throw on a transient fault), and holds the lock when it returns.
TEST(DistributedLock, C1_LockRidesThroughATransientOutage) {
    local_server s;
    connection_pool pool(s.endpoint());
    distributed_lock l(pool, "c1-outage", {.timing = {.ttl = 10s}});
    s.kill();
    auto entered = std::async(std::launch::async, [&] {
        l.lock();
        return l.held();
    });
    std::this_thread::sleep_for(300ms);
    s.restart();
    ASSERT_EQ(entered.wait_for(15s), std::future_status::ready);
    EXPECT_TRUE(entered.get());
    l.unlock();
}

// M1: a spent extension budget ended the watchdog silently; the key expired and on_lost never
// fired. Now the loss is reported when the validity ends, while the key still exists.
TEST(DistributedLock, M1_SpentBudgetReportsLossBeforeExpiry) {
    local_server s;
    connection_pool pool(s.endpoint());
    lock_options o;
    o.timing.ttl = 300ms;
    o.timing.drift_factor = 0.2;  // 62 ms between the local validity and the key's expiry
    o.watchdog = true;
    o.max_extensions = 2;
    distributed_lock l(pool, "m1", o);
    std::promise<std::int64_t> pttl_at_loss;
    const auto lost_slot = l.on_lost([&](const std::string&) {
        pttl_at_loss.set_value(s.command({"PTTL", l.key()}).integer());
    });
    ASSERT_TRUE(l.try_lock());
    auto f = pttl_at_loss.get_future();
    ASSERT_EQ(f.wait_for(3s), std::future_status::ready)
        << "no loss callback after the budget ran out";
    EXPECT_GT(f.get(), 0) << "the loss was reported only after the key expired";
    EXPECT_TRUE(l.lost());
}

TEST(Redlock, M1_SpentBudgetReportsLossBeforeExpiry) {
    nodes n(3);
    redlock_options o;
    o.timing.ttl = 300ms;
    o.timing.drift_factor = 0.2;
    o.watchdog = true;
    o.max_extensions = 2;
    redlock l(n.ptrs, "m1", o);
    std::promise<std::int64_t> pttl_at_loss;
    const auto lost_slot = l.on_lost([&](const std::string&) {
        pttl_at_loss.set_value(n.servers[0]->command({"PTTL", l.key()}).integer());
    });
    ASSERT_TRUE(l.try_lock());
    auto f = pttl_at_loss.get_future();
    ASSERT_EQ(f.wait_for(3s), std::future_status::ready);
    EXPECT_GT(f.get(), 0);
    EXPECT_TRUE(l.lost());
}

// M1: a validity that passes without any extension (watchdog off) is reported too.
TEST(DistributedLock, M1_ValidityPassingWithoutExtensionIsReported) {
    local_server s;
    connection_pool pool(s.endpoint());
    distributed_lock l(pool, "m1-plain", {.timing = {.ttl = 200ms}});
    std::promise<void> lost;
    const auto lost_slot = l.on_lost([&](const std::string&) { lost.set_value(); });
    ASSERT_TRUE(l.try_lock());
    EXPECT_EQ(lost.get_future().wait_for(2s), std::future_status::ready);
    EXPECT_TRUE(l.lost());
}

// M1: the default budget keeps a long holding alive (no silent end after 100 extensions).
TEST(DistributedLock, M1_DefaultBudgetIsUnbounded) {
    EXPECT_EQ(lock_options{}.max_extensions, std::numeric_limits<std::size_t>::max());
    EXPECT_EQ(redlock_options{}.max_extensions, std::numeric_limits<std::size_t>::max());
    local_server s;
    connection_pool pool(s.endpoint());
    lock_options o;
    // Extends every 20 ms: 150 extensions in 3 s, more than the old default of 100. (A 30 ms
    // TTL left 20 ms of slack per extension, which a TLS run on a loaded machine overran.)
    o.timing.ttl = 60ms;
    o.timing.drift_factor = 0;
    o.watchdog = true;
    distributed_lock l(pool, "m1-long", o);
    std::atomic<int> losses{0};
    const auto lost_slot = l.on_lost([&](const std::string&) { ++losses; });
    ASSERT_TRUE(l.try_lock());
    std::this_thread::sleep_for(3000ms);
    EXPECT_FALSE(l.lost());
    EXPECT_EQ(losses.load(), 0);
    EXPECT_TRUE(l.release());
}

// M2: with replicas > 0 an extension the replica did not acknowledge must not move the local
// validity (a failover would hand the lock over at the old expiry).
TEST(ReplicatedLock, M2_UnacknowledgedExtensionKeepsTheOldValidity) {
    master_and_replica s;
    lock_options o;
    o.timing.ttl = 2s;
    o.replication.replicas = 1;
    o.replication.timeout = 100ms;
    distributed_lock l(s.pool, "m2", o);
    ASSERT_TRUE(l.try_lock());
    const auto before = l.current()->valid_until;
    s.replica->pause();
    EXPECT_FALSE(l.extend(10s));
    EXPECT_EQ(l.current()->valid_until, before);
    EXPECT_FALSE(l.lost());
    s.replica->resume();
    EXPECT_TRUE(l.extend(10s));
    EXPECT_GT(l.current()->valid_until, before + 5s);
    EXPECT_EQ(s.replica->command({"GET", l.key()}).text(), l.current()->token);
}

// M4: two threads sharing one redlock while the nodes are slow: the refusal state of one
// thread's wait was read after the gate was left, racing the other thread's round (TSan).
TEST(Redlock, M4_SharedObjectWithSlowNodesHasNoRace) {
    nodes n(3);
    redlock r(
        n.ptrs, "m4",
        {.timing = {.ttl = 5s, .retry_jitter = 1ms}, .node_timeout = 20ms, .retry_delay = 1ms});
    n.servers[0]->pause();
    n.servers[1]->pause();
    std::atomic<int> unreachable{0};
    std::vector<std::thread> ts;
    for (int i = 0; i < 4; ++i)
        ts.emplace_back([&] {
            for (int k = 0; k < 10; ++k) {
                try {
                    (void)r.acquire(30ms);
                } catch (const quorum_unreachable&) {
                    ++unreachable;
                }
            }
        });
    for (auto& t : ts) t.join();
    n.servers[0]->resume();
    n.servers[1]->resume();
    EXPECT_GT(unreachable.load(), 0);
}

// M5: a full pool is not a node that is down. Six threads share pools of 2 connections per
// node: lock() must never throw quorum_unreachable, and every section is exclusive.
TEST(Redlock, M5_PoolExhaustionIsNotQuorumUnreachable) {
    pool_options po;
    po.max_size = 2;
    nodes n(3, po);
    std::atomic<int> inside{0}, overlaps{0}, done{0};
    std::atomic<int> errors{0};
    std::vector<std::thread> ts;
    for (int i = 0; i < 6; ++i)
        ts.emplace_back([&] {
            redlock r(n.ptrs, "m5", {.timing = {.ttl = 5s}});
            for (int k = 0; k < 4; ++k) {
                try {
                    std::lock_guard g(r);
                    if (++inside > 1) ++overlaps;
                    std::this_thread::sleep_for(1ms);
                    --inside;
                    ++done;
                } catch (const std::exception&) {
                    ++errors;
                }
            }
        });
    for (auto& t : ts) t.join();
    EXPECT_EQ(errors.load(), 0);
    EXPECT_EQ(overlaps.load(), 0);
    EXPECT_EQ(done.load(), 24);
}

// M5: a held lock is never declared lost because its pools are busy.
TEST(Redlock, M5_BusyPoolsDoNotLoseAHeldLock) {
    pool_options po;
    po.max_size = 2;  // the least the watchdog accepts
    po.borrow_timeout = 2s;
    nodes n(3, po);
    redlock_options o;
    o.timing.ttl = 600ms;
    o.watchdog = true;
    redlock l(n.ptrs, "m5-held", o);
    ASSERT_TRUE(l.try_lock());
    // Occupy every pool's connection half of the time, 30 ms at a time, while the watchdog
    // extends (every 200 ms): a tick that finds the pools full waits for a connection within
    // node_timeout (50 ms) instead of counting the nodes as down and the lock as lost.
    const auto until = clock_type::now() + 1500ms;
    while (clock_type::now() < until) {
        {
            std::vector<pooled_connection> held;
            for (auto* p : n.ptrs)
                for (int c = 0; c < 2; ++c) held.push_back(p->borrow());
            std::this_thread::sleep_for(30ms);
        }
        std::this_thread::sleep_for(30ms);
    }
    EXPECT_FALSE(l.lost());
    EXPECT_TRUE(l.release());
    // A pool too small for the watchdog is refused up front.
    pool_options one;
    one.max_size = 1;
    connection_pool small(n.servers[0]->endpoint(), one);
    std::vector<connection_pool*> smalls{&small};
    EXPECT_THROW(redlock(smalls, "m5-small", o), invalid_argument);
    lock_options lo;
    lo.watchdog = true;
    EXPECT_THROW(distributed_lock(small, "m5-small", lo), invalid_argument);
}

// m4: a single-instance acquire whose reply is lost gives its key back instead of blocking
// every client (this one included) for the whole TTL.
TEST(DistributedLock, m4_LostAcquireReplyGivesTheKeyBack) {
    local_server s;
    endpoint ep = s.endpoint();
    ep.command_timeout = 100ms;
    connection_pool pool(ep);
    (void)pool.command({"PING"});  // connected before the server stalls
    distributed_lock l(pool, "m4", {.timing = {.ttl = 30s}});
    // The server runs the acquire but answers late: a DEBUG SLEEP queued just before.
    std::thread sleeper([&] { (void)s.command({"DEBUG", "SLEEP", "0.3"}); });
    std::this_thread::sleep_for(50ms);
    EXPECT_THROW((void)l.try_lock(), error);
    sleeper.join();
    // Given back: free again well before the 30 s TTL.
    const auto deadline = clock_type::now() + 3s;
    while (s.command({"EXISTS", l.key()}).integer() == 1 && clock_type::now() < deadline)
        std::this_thread::sleep_for(20ms);
    EXPECT_EQ(s.command({"EXISTS", l.key()}).integer(), 0);
}

// m10: an extension to a shorter TTL whose reply is lost must not keep the longer validity.
TEST(DistributedLock, m10_LostShorterExtensionShortensTheValidity) {
    local_server s;
    endpoint ep = s.endpoint();
    ep.command_timeout = 100ms;
    connection_pool pool(ep);
    distributed_lock l(pool, "m10", {.timing = {.ttl = 30s}});
    ASSERT_TRUE(l.try_lock());
    std::thread sleeper([&] { (void)s.command({"DEBUG", "SLEEP", "0.3"}); });
    std::this_thread::sleep_for(50ms);
    const auto t0 = clock_type::now();
    EXPECT_THROW((void)l.extend(1s), outcome_unknown);
    sleeper.join();
    EXPECT_LE(l.current()->valid_until, t0 + 1s);
}

// m11: try_lock_for(short) against a stalled server returns near its deadline, not after the
// pool's and connection's timeouts (seconds).
TEST(DistributedLock, m11_TimedTryLockHonoursItsDeadline) {
    local_server s;
    connection_pool pool(s.endpoint());
    (void)pool.command({"PING"});
    distributed_lock l(pool, "m11", {.timing = {.ttl = 10s}});
    s.pause();
    const auto t0 = clock_type::now();
    try {
        (void)l.try_lock_for(100ms);
    } catch (const error&) {}
    const auto took = clock_type::now() - t0;
    s.resume();
    EXPECT_LT(took, 1s);
}

// m11: the attempt a timed wait makes at its deadline is bounded by that deadline; when it
// runs out there, the wait simply ends without the lock (false), not with a timeout_error of
// the library's own making (the CLI's `lock --wait` would exit "connection" instead of
// "timed out").
TEST(DistributedLock, m11_TimedWaitEndingOnAStalledServerReturnsFalse) {
    local_server s;
    connection_pool pool(s.endpoint());
    distributed_lock holder(pool, "m11b", {.timing = {.ttl = 10s}});
    ASSERT_TRUE(holder.try_lock());
    distributed_lock l(pool, "m11b", {.timing = {.ttl = 10s}});
    std::thread staller([&] {
        std::this_thread::sleep_for(150ms);
        (void)s.command({"CLIENT", "PAUSE", "300", "ALL"});  // spans the wait's deadline
    });
    const auto t0 = clock_type::now();
    bool got = true;
    EXPECT_NO_THROW(got = l.try_lock_for(200ms));
    staller.join();
    EXPECT_FALSE(got);
    EXPECT_LT(clock_type::now() - t0, 1s);
}

// m6: redlock::release() reaches every node, also one whose connection had to be made anew.
TEST(Redlock, m6_ReleaseReachesEveryNode) {
    nodes n(5);
    redlock r(n.ptrs, "m6", {.timing = {.ttl = 30s}});
    ASSERT_TRUE(r.try_lock());
    std::this_thread::sleep_for(50ms);
    // Drop the idle connections of two nodes, so their release needs a connect.
    for (int i = 0; i < 2; ++i) n.pools[i]->clear_idle();
    EXPECT_TRUE(r.release());
    std::this_thread::sleep_for(200ms);
    for (auto& s : n.servers) EXPECT_EQ(s->command({"EXISTS", r.key()}).integer(), 0);
}

// Keyspace hygiene: locking many distinct resources once each leaves no key without a TTL, and
// fencing tokens still increase across the expiry of their counter key.
TEST(DistributedLock, Hygiene_NoKeyWithoutTtlAndTokensIncreaseAcrossExpiry) {
    local_server s;
    connection_pool pool(s.endpoint());
    constexpr int n = 10000;
    std::vector<std::uint64_t> first(n);
    for (int i = 0; i < n; ++i) {
        distributed_lock l(pool, "order-" + std::to_string(i), {.timing = {.ttl = 200ms}});
        ASSERT_TRUE(l.try_lock());
        first[i] = l.fencing_token();
        l.unlock();
    }
    EXPECT_EQ(s.keys_without_ttl(), std::vector<std::string>{});
    std::this_thread::sleep_for(400ms);  // every counter key expires
    for (int i = 0; i < n; i += 97) {
        distributed_lock l(pool, "order-" + std::to_string(i), {.timing = {.ttl = 200ms}});
        // Gone (EXISTS expires it on access; DBSIZE may still count keys the server has not
        // reclaimed yet).
        ASSERT_EQ(s.command({"EXISTS", l.key() + ":fence"}).integer(), 0);
        ASSERT_TRUE(l.try_lock());
        EXPECT_GT(l.fencing_token(), first[i]);
        EXPECT_LT(l.fencing_token(), std::uint64_t{1} << 53);
        l.unlock();
    }
}

TEST(Redlock, Hygiene_NoKeyWithoutTtlAndTokensIncreaseAcrossExpiry) {
    nodes n(3);
    std::vector<std::uint64_t> first(200);
    for (int i = 0; i < 200; ++i) {
        redlock l(n.ptrs, "order-" + std::to_string(i), {.timing = {.ttl = 200ms}});
        ASSERT_TRUE(l.try_lock());
        first[i] = l.fencing_token();
        ASSERT_TRUE(l.release());
    }
    for (auto& s : n.servers) EXPECT_EQ(s->keys_without_ttl(), std::vector<std::string>{});
    std::this_thread::sleep_for(400ms);
    for (int i = 0; i < 200; i += 7) {
        redlock l(n.ptrs, "order-" + std::to_string(i), {.timing = {.ttl = 200ms}});
        ASSERT_TRUE(l.try_lock());
        EXPECT_GT(l.fencing_token(), first[i]);
        l.unlock();
    }
}

// Nit: huge waits saturate instead of overflowing (an immediate timeout before).
TEST(DistributedLock, C8_MaxWaitBlocksUntilReleased) {
    local_server s;
    connection_pool pool(s.endpoint());
    distributed_lock holder(pool, "c8", {.timing = {.ttl = 10s}});
    ASSERT_TRUE(holder.try_lock());
    distributed_lock l(pool, "c8", {.timing = {.ttl = 10s}});
    expect_waits_for_release(holder, 300ms,
                             [&] { return l.try_lock_for(std::chrono::milliseconds::max()); });
    l.unlock();
    auto got2 = l.acquire(std::chrono::milliseconds::max());
    EXPECT_TRUE(got2);
}
