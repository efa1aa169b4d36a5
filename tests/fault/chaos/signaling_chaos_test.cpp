// signal_hub and barrier under fault schedules (signaling_schedule.hpp): the short fixed set of
// ./scripts/test. Safe families must show no violation; each demonstration breaks a documented
// assumption and the checker must catch it.

#include "signaling_schedule.hpp"

#include "chaos_test.hpp"

namespace {

chaos::signaling_outcome run(const chaos::signaling_schedule& s) {
    return chaos::run_printed("signaling", s, CHAOS_SIGNALING_CLIENT);
}

// Every run must have exercised the hub and the barrier: signals owed to members while their
// links were up (the rule's real test), receipts and generations passed.
void expect_exercised(const chaos::signaling_outcome& o) {
    EXPECT_GT(o.signals, 100u);
    EXPECT_GT(o.covered, 100u);
    EXPECT_GT(o.receipts, 200u);
    EXPECT_GT(o.passes, 10u);
}

}  // namespace

TEST(ChaosSignaling, EverySignalOnceAndNoEarlyBarrierWhenMembersAreCutFromALinkOrPaused) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::safe_signaling_schedule(2, 8));  // 2 % 2 == 0
    EXPECT_TRUE(o.violations.empty()) << o.report();
    expect_exercised(o);
    EXPECT_GE(o.partitions + o.pauses, 3u);
    EXPECT_GT(o.via_replica, 5u);  // the replica link carried signals while the master's was cut
}

TEST(ChaosSignaling, EverySignalOnceAndNoEarlyBarrierWhenTheMasterRestarts) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::safe_signaling_schedule(3, 8));
    EXPECT_TRUE(o.violations.empty()) << o.report();
    expect_exercised(o);
    EXPECT_GE(o.restarts, 2u);
}

// Plain PUBLISH carries no envelope: the master link and the replica link each deliver it.
TEST(ChaosSignaling, SignalsWithoutTheHubsEnvelopeArriveTwiceAndAreCaught) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::signaling_demonstrations(10, 4)[0]);
    EXPECT_TRUE(o.broke("received once")) << o.receipts << " receipts of " << o.signals;
}

// Clients that count 2 parties while 3 take part: generations pass before all arrived.
TEST(ChaosSignaling, ABarrierWithTooFewPartiesReleasesEarlyAndIsCaught) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::signaling_demonstrations(10, 4)[1]);
    EXPECT_TRUE(o.broke("barrier never releases early")) << o.passes << " passes";
}
