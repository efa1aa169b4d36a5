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
    const auto o = run(chaos::safe_election_schedule(2, 9));
    EXPECT_TRUE(o.violations.empty()) << o.report();
    // Leadership moved at least once. The faults pick candidates at random, not the leader, so
    // how often it moves varies (2 terms under a loaded full suite, 3-5 alone).
    EXPECT_GE(o.terms, 2u);
    EXPECT_GT(o.accepted, 50u);
    EXPECT_GT(o.partitions + o.pauses, 4u);
}

TEST(ChaosElection, ServerRestartsDelayedByATermKeepOneLeader) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::safe_election_schedule(3, 8));
    EXPECT_TRUE(o.violations.empty()) << o.report();
    EXPECT_GT(o.restarts, 2u);
}

TEST(ChaosElection, ServerRestartsAtOnceAreCaught) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::election_demonstration(4, 8));
    EXPECT_TRUE(o.broke("one leader at a time"))
        << o.restarts << " restarts, " << o.terms << " terms";
}
