// reliable_queue under fault schedules (queue_schedule.hpp): the short fixed set of
// ./scripts/test. Safe families must show no violation; the demonstration breaks a documented
// assumption (the server keeps its data across a restart) and the checker must catch it.

#include "queue_schedule.hpp"

#include "chaos_test.hpp"
#include "work_test.hpp"

namespace {

chaos::queue_outcome run(const chaos::queue_schedule& s) {
    return chaos::run_printed("queue", s, CHAOS_QUEUE_CLIENT);
}

}  // namespace

TEST(ChaosQueue, NothingLostWhenConsumersAreCutOffOrPausedPastTheirLease) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::safe_queue_schedule(3, 7));  // 3 % 3 == 0
    EXPECT_TRUE(o.violations.empty()) << o.report();
    chaos::expect_exercised(o);
    EXPECT_GE(o.partitions + o.pauses, 3u);
}

TEST(ChaosQueue, NothingLostWhenConsumersAreKilled) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::safe_queue_schedule(4, 7));
    EXPECT_TRUE(o.violations.empty()) << o.report();
    chaos::expect_exercised(o);
    EXPECT_GT(o.kills, 4u);
}

TEST(ChaosQueue, NothingLostWhenTheServerRestartsWithAppendFsyncAlways) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::safe_queue_schedule(5, 7));
    EXPECT_TRUE(o.violations.empty()) << o.report();
    chaos::expect_exercised(o);
    EXPECT_GT(o.restarts, 2u);
}

// Restarted at once without persistence, the server forgets the backlog and every message in
// flight: acknowledged pushes are neither acked nor left.
TEST(ChaosQueue, RestartsWithoutPersistenceLoseAcknowledgedPushesAndAreCaught) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::queue_demonstration(6, 5));
    EXPECT_TRUE(o.broke("nothing lost")) << o.restarts << " restarts, " << o.pushed << " pushes";
}
