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
