// Jobs under fault schedules (jobs_schedule.hpp): the short fixed set of ./scripts/test. Safe
// families must show no violation; the demonstration breaks a documented assumption (the server
// keeps its data across a restart) and the checker must catch it.

#include "jobs_schedule.hpp"

#include "chaos_test.hpp"
#include "work_test.hpp"

namespace {

chaos::queue_outcome run(const chaos::queue_schedule& s) {
    return chaos::run_printed("jobs", s, CHAOS_JOBS_CLIENT, chaos::run_jobs);
}

}  // namespace

// Workers cut from the server or paused past their lease: their jobs run again elsewhere, and
// their late completions are refused (the result is the last attempt's).
TEST(ChaosJobs, NothingLostAndLateCompletionsRefusedWhenWorkersAreCutOffOrPaused) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::safe_jobs_schedule(3, 7));  // 3 % 3 == 0
    EXPECT_TRUE(o.violations.empty()) << o.report();
    chaos::expect_exercised(o);
    EXPECT_GE(o.partitions + o.pauses, 3u);
}

TEST(ChaosJobs, NothingLostWhenTheServerRestartsWithAppendFsyncAlways) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::safe_jobs_schedule(5, 7));
    EXPECT_TRUE(o.violations.empty()) << o.report();
    chaos::expect_exercised(o);
    EXPECT_GT(o.restarts, 2u);
}

// Restarted at once without persistence, the server forgets the waiting jobs: acknowledged adds
// are neither completed nor left.
TEST(ChaosJobs, RestartsWithoutPersistenceLoseAcknowledgedJobsAndAreCaught) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::jobs_demonstration(6, 5));
    EXPECT_TRUE(o.broke("nothing lost")) << o.restarts << " restarts, " << o.pushed << " adds";
}

// Flows (issue 37): parents wait for their children while workers are killed, cut off and
// paused; a parent never starts before its last child's completing run returned, sees every
// child's result, and none is lost or left waiting.
TEST(ChaosJobs, FlowParentsRunAfterTheirChildrenWhileWorkersAreKilledAndCutOff) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::flows_schedule(7, 6));
    EXPECT_TRUE(o.violations.empty()) << o.report();
    chaos::expect_exercised(o);
    EXPECT_GE(o.kills + o.partitions + o.pauses, 3u);
    EXPECT_GT(o.parents_run, 50u) << "too few parents ran for the ordering to be checked";
}

// The checker catches a broken release: parents released as soon as a child starts run
// before their children completed.
TEST(ChaosJobs, ParentsReleasedEarlyAreCaught) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::flows_demonstration(8, 4));
    EXPECT_TRUE(o.broke("parent after its children")) << o.parents_run << " parents ran";
}

// Groups (issue 37): jobs of three groups with limits while workers are killed, cut off and
// paused; no group ever runs more jobs at once than its limit, and nothing is lost.
TEST(ChaosJobs, GroupsStayWithinTheirLimitsWhileWorkersAreKilledAndCutOff) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::groups_schedule(9, 6));
    EXPECT_TRUE(o.violations.empty()) << o.report();
    chaos::expect_exercised(o);
    EXPECT_GE(o.kills + o.partitions + o.pauses, 3u);
    EXPECT_GT(o.group_runs, 50u) << "too few grouped runs for the limits to be checked";
}

// The checker catches a broken count: a group whose active count is zeroed at each start runs
// past its limit.
TEST(ChaosJobs, GroupsRunningPastTheirLimitAreCaught) {
    CHAOS_SKIP_WITHOUT_NAMESPACES();
    const auto o = run(chaos::groups_demonstration(10, 4));
    EXPECT_TRUE(o.broke("group limit")) << o.group_runs << " grouped runs";
}
