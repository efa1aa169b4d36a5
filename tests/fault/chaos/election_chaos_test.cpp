// leader_elector under fault schedules (election_schedule.hpp): the short fixed set of
// ./scripts/test. Safe families must show no violation; the demonstration breaks a documented
// assumption (a server that forgets the selector at once) and the checker must catch it.

#include "election_schedule.hpp"

#include <redcoord/testing/local_network.hpp>

#include <gtest/gtest.h>

#include <cstdio>

using redcoord::testing::local_network;

namespace {

#define SKIP_WITHOUT_NAMESPACES()                                                   \
    do {                                                                            \
        if (auto why = local_network::unavailable_reason()) GTEST_SKIP() << *why; \
    } while (0)

chaos::election_outcome run(const chaos::election_schedule& s) {
    auto o = chaos::run(s, CHAOS_ELECTION_CLIENT);
    std::printf("chaos election [%s] seed %u: %s\n", s.family.c_str(), s.seed, o.summary().c_str());
    EXPECT_TRUE(o.clients_finished) << "a client did not finish";
    return o;
}

}  // namespace

TEST(ChaosElection, OneLeaderAtATimeWhenCandidatesAreCutOffOrPaused) {
    SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::safe_election_schedule(2, 9));
    EXPECT_TRUE(o.violations.empty()) << o.report();
    EXPECT_GT(o.terms, 2u);  // leadership moved
    EXPECT_GT(o.accepted, 50u);
    EXPECT_GT(o.partitions + o.pauses, 4u);
}

TEST(ChaosElection, ServerRestartsDelayedByATermKeepOneLeader) {
    SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::safe_election_schedule(3, 8));
    EXPECT_TRUE(o.violations.empty()) << o.report();
    EXPECT_GT(o.restarts, 2u);
}

TEST(ChaosElection, ServerRestartsAtOnceAreCaught) {
    SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::election_demonstration(4, 8));
    EXPECT_TRUE(o.broke("one leader at a time")) << o.restarts << " restarts, " << o.terms << " terms";
}
