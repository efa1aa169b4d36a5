// The limiters under fault schedules (limit_schedule.hpp): the short fixed set of
// ./scripts/test. Safe families must show no violation; each demonstration breaks the
// limiter on purpose and the checker must catch it (a checker that cannot fail proves nothing).

#include "limit_schedule.hpp"

#include "chaos_test.hpp"

namespace {

chaos::limit_outcome run(const chaos::limit_schedule& s) {
    return chaos::run_printed("limit", s, CHAOS_LIMIT_CLIENT);
}

using chaos::limit_family;

}  // namespace

// Holders cut from the server or paused past the 300 ms TTL: a holding ends at its validity,
// and the server gives its permits to others only after that.
TEST(ChaosLimit, SemaphoreNeverExceedsNWhenHoldersAreCutOffOrPaused) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::safe_limit_schedule(limit_family::semaphore_cut_or_paused, 40, 5));
    EXPECT_TRUE(o.violations.empty()) << "seed 40\n" << o.report();
    EXPECT_GT(o.holds, 20u);
    EXPECT_GE(o.partitions + o.pauses, 3u);
}

// Holders SIGKILLed while holding: their leases stand until their TTL, and no more than N
// permits are held by live leases at any instant.
TEST(ChaosLimit, SemaphoreNeverExceedsNWhenHoldersAreKilled) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::safe_limit_schedule(limit_family::semaphore_killed, 41, 5));
    EXPECT_TRUE(o.violations.empty()) << "seed 41\n" << o.report();
    EXPECT_GT(o.holds, 20u);
    EXPECT_GT(o.kills, 3u);
}

TEST(ChaosLimit, RwLockWriterIsAloneWhenHoldersAreCutOffOrPaused) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::safe_limit_schedule(limit_family::rw_lock_cut_or_paused, 42, 5));
    EXPECT_TRUE(o.violations.empty()) << "seed 42\n" << o.report();
    EXPECT_GT(o.holds, 20u);
    EXPECT_GE(o.partitions + o.pauses, 3u);
}

// GCRA runs on the server's clock: clients an hour ahead, an hour behind, and jumping by up to
// a day get no more than burst + rate x t between them, and still get it.
TEST(ChaosLimit, RateLimiterIgnoresClientClocksSkewedByHours) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::safe_limit_schedule(limit_family::rate_clock_skew, 43, 5));
    EXPECT_TRUE(o.violations.empty()) << "seed 43\n" << o.report();
    EXPECT_GT(o.clock_jumps, 3u);
    EXPECT_GT(o.refused, o.allowed);  // asked far above the rate
    // Allowed: about burst + rate x 5 s; at least half of it (a loaded machine is slow).
    EXPECT_GT(o.allowed, 50u);
}

TEST(ChaosLimit, SemaphoreHoldersOutlivingTheirValidityAreCaught) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::limit_demonstrations(50, 4)[0]);
    EXPECT_TRUE(o.broke("at most N permits")) << o.summary();
}

TEST(ChaosLimit, ASemaphoreForgettingKilledHoldersLeasesIsCaught) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::limit_demonstrations(50, 5)[1]);
    EXPECT_TRUE(o.broke("at most N permits")) << o.summary();
}

TEST(ChaosLimit, RwLockHoldersOutlivingTheirValidityAreCaught) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::limit_demonstrations(50, 4)[2]);
    EXPECT_TRUE(o.broke("writer alone")) << o.summary();
}

TEST(ChaosLimit, AFixedWindowOnTheClientsClocksIsCaught) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::limit_demonstrations(50, 4)[3]);
    EXPECT_TRUE(o.broke("within the rate")) << o.summary();
}
