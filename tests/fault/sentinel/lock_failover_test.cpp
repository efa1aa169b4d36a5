// distributed_lock across a real Sentinel failover: the failover race of the Redlock page
// ("Why failover-based implementations are not enough"; Redisson's WAIT after locking) and the
// replica-acknowledgement option that prevents it.
#include "failover_faults.hpp"

#include <redcoord/core/errors.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/testing/local_sentinel.hpp>

#include <gtest/gtest.h>

#include <iostream>
#include <thread>

using namespace redcoord;
using namespace std::chrono_literals;
using redcoord::testing::local_sentinel;
using redcoord::testing::local_sentinel_options;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr auto failover_bound = 20s;

local_sentinel_options two_replicas() {
    local_sentinel_options o;
    o.replicas = 2;  // the promoted master keeps a replica to WAIT for
    return o;
}

// The option under test: lock_options::replicas. An acquisition counts only once that many
// replicas acknowledged it (WAIT on the same connection, pipelined with the acquire script);
// otherwise it is released and reported as not acquired.
lock_options replicated(std::chrono::milliseconds ttl) {
    lock_options o;
    o.timing.ttl = ttl;
    o.replication.replicas = 1;
    o.replication.timeout = 100ms;
    return o;
}

// Retries until B holds the lock on whatever master Sentinel promoted.
template <class F>
std::optional<lock_acquisition> acquire_after_failover(F attempt) {
    auto deadline = clock_type::now() + failover_bound;
    while (clock_type::now() < deadline) {
        try {
            if (auto a = attempt()) return a;
        } catch (const error&) {}
        std::this_thread::sleep_for(20ms);
    }
    return std::nullopt;
}

}  // namespace

TEST(LockFailover, AsyncReplicationLetsTwoClientsHoldTheLock) {
    local_sentinel svc(two_replicas());
    connection_pool pool_a(svc.endpoint()), pool_b(svc.endpoint());
    lock_options o;
    o.timing.ttl = 30000ms;  // far longer than the failover: A's validity outlives the old master
    distributed_lock a(pool_a, "resource", o), b(pool_b, "resource", o);
    // An earlier holding that did replicate: the replicas know the fencing counter.
    ASSERT_TRUE(a.acquire(0ms));
    ASSERT_TRUE(a.release());
    (void)pool_a.command({"WAIT", "2", "5000"});  // the release's connection: its writes replicated

    std::optional<lock_acquisition> held_a;
    {
        sentinel_test::replication_cut cut(svc);
        held_a = a.acquire(0ms);  // granted by the master, never replicated
        ASSERT_TRUE(held_a);
        (void)cut.kill_master_and_resume();
    }
    auto held_b = acquire_after_failover([&] { return b.acquire(0ms); });
    ASSERT_TRUE(held_b) << "B could not lock on the promoted master";
    // The race: both believe they hold the lock, within their validity.
    EXPECT_GT(held_a->remaining().count(), 0);
    EXPECT_GT(held_b->remaining().count(), 0);
    // Even the fencing counter's last step was lost with the old master: B's token does not
    // exceed A's (the promoted replica's counter is one behind), so the resource cannot tell
    // the two holders apart either (documented: fencing needs replicas >= 1 across failover).
    EXPECT_LE(held_b->fencing_token, held_a->fencing_token);
    std::cout << "[sentinel/lock] without WAIT: A token " << held_a->fencing_token << " (valid "
              << held_a->remaining().count() << " ms more), B token " << held_b->fencing_token
              << "\n";
}

TEST(LockFailover, WaitingForAReplicaBeforeTheLockCountsPreventsTheRace) {
    local_sentinel svc(two_replicas());
    connection_pool pool_a(svc.endpoint()), pool_b(svc.endpoint());
    const auto o = replicated(30000ms);
    distributed_lock a(pool_a, "resource", o), b(pool_b, "resource", o);

    // Normal operation: the replica acknowledges, the acquisition counts.
    auto first = a.acquire(0ms);
    ASSERT_TRUE(first);
    EXPECT_TRUE(a.release());

    std::optional<lock_acquisition> held_a;
    {
        sentinel_test::replication_cut cut(svc);
        held_a = a.acquire(0ms);
        EXPECT_FALSE(held_a) << "no replica acknowledged, so A must not count the lock";
        (void)cut.kill_master_and_resume();
    }
    auto held_b = acquire_after_failover([&] { return b.acquire(0ms); });
    ASSERT_TRUE(held_b) << "B could not lock (with a replica acknowledgement) after the failover";
    // A, trying again on the promoted master, is refused: one holder.
    auto again = a.acquire(0ms);
    EXPECT_FALSE(again);
    EXPECT_GT(held_b->fencing_token, first->fencing_token);
}
