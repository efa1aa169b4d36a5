// Redlock under fault schedules (lock_schedule.hpp): the short fixed set of ./scripts/test.
// Safe families must show no violation; each demonstration breaks a documented assumption on
// purpose and the checker must catch it (a checker that cannot fail proves nothing).

#include "lock_schedule.hpp"

#include "chaos_test.hpp"

namespace {

chaos::lock_outcome run(const chaos::lock_schedule& s) {
    return chaos::run_printed("lock", s, CHAOS_LOCK_CLIENT);
}

}  // namespace

TEST(ChaosLock, RedlockKeepsExclusionUnderMinorityPartitionsAndPausedHolders) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::safe_schedule(chaos::lock_family::minority_partitions, 18, 8));
    EXPECT_TRUE(o.violations.empty()) << "seed 18\n" << o.report();
    // The schedule must have exercised the lock: holdings, writes through the fence, faults.
    EXPECT_GT(o.holds, 20u);
    EXPECT_GT(o.accepted, 10u);
    EXPECT_GT(o.partitions + o.pauses, 5u);
}

TEST(ChaosLock, SkewWithinTheDriftAllowanceKeepsExclusion) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::safe_schedule(chaos::lock_family::skew_within_drift, 19, 5));
    EXPECT_TRUE(o.violations.empty()) << o.report();
    EXPECT_GT(o.holds, 5u);
}

TEST(ChaosLock, RestartsWithoutPersistenceDelayedByATtlKeepExclusion) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::safe_schedule(chaos::lock_family::delayed_restarts, 20, 6));
    EXPECT_TRUE(o.violations.empty()) << o.report();
    EXPECT_GT(o.restarts, 3u);
}

// A client cut from two masters of three cannot reach a majority, and two clients cut from
// different masters each reach a different majority: the majorities overlap in one master,
// and that master refuses the second holder.
TEST(ChaosLock, RedlockKeepsExclusionUnderMajorityPartitionsAndSplitMajorities) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::safe_schedule(chaos::lock_family::majority_partitions, 21, 8));
    EXPECT_TRUE(o.violations.empty()) << "seed 21\n" << o.report();
    EXPECT_GT(o.holds, 20u);
    EXPECT_GT(o.accepted, 10u);
    EXPECT_GT(o.partitions, 2u);
}

// The Redlock page's alternative to delayed restarts: with `appendfsync always` a master
// restarted at once remembers every key it acknowledged (and its TTL, kept as an absolute
// time), so it cannot hand a second majority out.
TEST(ChaosLock, RestartsAtOnceWithAofFsyncAlwaysKeepExclusion) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::safe_schedule(chaos::lock_family::aof_restarts, 22, 6));
    EXPECT_TRUE(o.violations.empty()) << o.report();
    EXPECT_GT(o.restarts, 3u);
    EXPECT_GT(o.holds, 5u);
}

// Holders keep working for twice the TTL: their holdings overlap, and the resource's fencing
// check must reject their late writes (nothing stale accepted).
TEST(ChaosLock, AHolderOutlivingItsValidityIsCaughtAndFencingRejectsItsLateWrites) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::demonstrations(30, 4)[0]);
    EXPECT_TRUE(o.broke("mutual exclusion")) << o.report();
    EXPECT_GT(o.rejected, 0u);
    EXPECT_FALSE(o.broke("stale write rejected")) << o.report();
}

TEST(ChaosLock, AResourceWithoutTheFencingCheckIsCaught) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::demonstrations(30, 4)[1]);
    EXPECT_TRUE(o.broke("stale write rejected")) << o.report();
}

// Two masters of three past the drift allowance: keys vanish at half the TTL on a majority
// while their holders still count on them. (One fast master of three can do it too, when it
// sits in two majorities at once; ./scripts/chaos --demonstrations reports how often.)
TEST(ChaosLock, MastersPastTheDriftAllowanceBreakExclusion) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::demonstrations(30, 5)[2]);
    EXPECT_TRUE(o.broke("mutual exclusion")) << o.report();
}

// The Redlock page's crash-recovery case: restarted at once without persistence, a master
// forgets keys that still count, and can give a contender a majority.
TEST(ChaosLock, RestartsWithoutPersistenceAtOnceAreCaught) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::demonstrations(30, 6)[3]);
    EXPECT_TRUE(o.broke("mutual exclusion"))
        << o.restarts << " restarts, " << o.holds << " holdings";
}

// distributed_lock on a master with two replicas behind three sentinels, failed over every
// few seconds (killed, or cut from the sentinels while the clients still reach it): with
// `replicas = 2` a grant counts only once every replica has it, so whichever replica is
// promoted never grants the lock again while its holder still relies on it.
TEST(ChaosLock, SingleInstanceLockKeepsExclusionUnderSentinelFailoversWaitingForEveryReplica) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::safe_schedule(chaos::lock_family::sentinel_failovers, 23, 12));
    EXPECT_TRUE(o.violations.empty()) << o.report();
    EXPECT_GE(o.failovers, 2u) << o.summary();
    EXPECT_GT(o.holds, 20u);
    EXPECT_GT(o.accepted, 10u);
}

// Every lease, validity and wait is on the monotonic clock: clients whose wall clocks jump by
// hours, forward and back, keep exclusion and keep acquiring.
TEST(ChaosLock, ClientWallClockJumpsChangeNothing) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::safe_schedule(chaos::lock_family::client_clock_jumps, 24, 5));
    EXPECT_TRUE(o.violations.empty()) << o.report();
    EXPECT_GT(o.clock_jumps, 5u);
    EXPECT_GT(o.holds, 20u);
}

// fair_lock on one master with its FIFO queue of leased waiters: holders and queued waiters cut
// from the master or paused past the TTL and their waiter lease. A holder cut off stops at its
// validity; a waiter that lost its place queues again; no two holdings overlap.
TEST(ChaosLock, FairLockKeepsExclusionWhenHoldersAndWaitersAreCutOffOrPaused) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::safe_schedule(chaos::lock_family::fair_partitions, 25, 8));
    EXPECT_TRUE(o.violations.empty()) << "seed 25\n" << o.report();
    EXPECT_GT(o.holds, 20u);
    EXPECT_GT(o.accepted, 10u);
    EXPECT_GT(o.partitions + o.pauses, 5u);
}

// The checker reads fair_lock's histories too: holders working past their validity are caught,
// and the fence rejects their late writes.
TEST(ChaosLock, AFairLockHolderOutlivingItsValidityIsCaught) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::demonstrations(30, 4)[5]);
    EXPECT_TRUE(o.broke("mutual exclusion")) << o.report();
    EXPECT_GT(o.rejected, 0u);
    EXPECT_FALSE(o.broke("stale write rejected")) << o.report();
}
