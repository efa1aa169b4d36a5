// leader_elector under fault schedules (election_schedule.hpp): the short fixed set of
// ./scripts/test. Safe families must show no violation; the demonstration breaks a documented
// assumption (a server that forgets the selector at once) and the checker must catch it.

#include "election_schedule.hpp"

#include "chaos_test.hpp"

namespace {

chaos::election_outcome run(const chaos::election_schedule& s) {
    return chaos::run_printed("election", s, CHAOS_ELECTION_CLIENT);
}

}  // namespace

TEST(ChaosElection, OneLeaderAtATimeWhenCandidatesAreCutOffOrPaused) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o =
        run(chaos::safe_election_schedule(chaos::election_family::candidates_cut_or_paused, 2, 9));
    EXPECT_TRUE(o.violations.empty()) << o.report();
    // Leadership moved at least once. The faults pick candidates at random, not the leader, so
    // how often it moves varies (2 terms under a loaded full suite, 3-5 alone).
    EXPECT_GE(o.terms, 2u);
    EXPECT_GT(o.accepted, 50u);
    EXPECT_GT(o.partitions + o.pauses, 4u);
}

TEST(ChaosElection, ServerRestartsDelayedByATermKeepOneLeader) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o =
        run(chaos::safe_election_schedule(chaos::election_family::delayed_restarts, 3, 8));
    EXPECT_TRUE(o.violations.empty()) << o.report();
    EXPECT_GT(o.restarts, 2u);
}

// Every fault hits whoever leads at that moment, so leadership must move: the cut or paused
// leader steps down by its local deadline before the server lets another candidate in.
TEST(ChaosElection, OneLeaderAtATimeWhenTheLeaderIsCutOffOrPaused) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o =
        run(chaos::safe_election_schedule(chaos::election_family::leader_cut_or_paused, 5, 9));
    EXPECT_TRUE(o.violations.empty()) << o.report();
    EXPECT_GE(o.terms, 4u);
    EXPECT_GT(o.accepted, 50u);
    EXPECT_GT(o.partitions + o.pauses, 4u);
}

// A server restarted at once that replays its AOF (fsync always) still holds the selector and
// its TTL, and the epoch counter: no second leader, epochs keep increasing.
TEST(ChaosElection, ServerRestartsAtOnceWithAofFsyncAlwaysKeepOneLeader) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::safe_election_schedule(chaos::election_family::aof_restarts, 6, 8));
    EXPECT_TRUE(o.violations.empty()) << o.report();
    EXPECT_GT(o.restarts, 2u);
    EXPECT_GT(o.accepted, 20u);
}

TEST(ChaosElection, ServerRestartsAtOnceAreCaught) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::election_demonstration(4, 8));
    EXPECT_TRUE(o.broke("one leader at a time"))
        << o.restarts << " restarts, " << o.terms << " terms";
}

// The election server is a master with two replicas behind three sentinels, failed over every
// few seconds (killed, or cut from the sentinels while the candidates still reach it). With
// `replicas = 2` every grant and renewal is on both replicas before it counts, so whichever
// is promoted never hands out a leadership whose old holder is still inside its term. (With
// `replicas = 1` two terms once overlapped by 0.1 s, as promoting the replica that had not
// acknowledged a renewal allows.)
TEST(ChaosElection, SentinelFailoversKeepOneLeaderWhenGrantsWaitForEveryReplica) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o =
        run(chaos::safe_election_schedule(chaos::election_family::sentinel_failovers, 7, 12));
    EXPECT_TRUE(o.violations.empty()) << o.report();
    EXPECT_GE(o.failovers, 2u) << o.summary();
    EXPECT_GE(o.terms, 2u);
    EXPECT_GT(o.accepted, 50u);
}

// Terms and deadlines are on the monotonic clock: candidates whose wall clocks jump by hours
// keep one leader at a time and keep leading.
TEST(ChaosElection, CandidateWallClockJumpsChangeNothing) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o =
        run(chaos::safe_election_schedule(chaos::election_family::client_clock_jumps, 8, 6));
    EXPECT_TRUE(o.violations.empty()) << o.report();
    EXPECT_GT(o.clock_jumps, 5u);
    EXPECT_GT(o.accepted, 50u);
}
