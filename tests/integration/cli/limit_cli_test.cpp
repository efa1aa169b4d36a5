// `redcoord limit` (rate limiter: admitted / refused with retry_after, CMD when admitted,
// --wait) and `redcoord lock -n N` (a semaphore slot: N runs at once, never more).
#include "cli_harness.hpp"

#include <sstream>

using namespace cli_test;

namespace {

struct LimitCli : ::testing::Test {
    redcoord::testing::local_server server;
    temp_dir dir;
    std::string url = server.url();
};

}  // namespace

TEST_F(LimitCli, AdmitsTheBurstThenRefusesWithRetryAfter) {
    for (int i = 2; i >= 0; --i) {
        const auto r = run(dir, {"--redis", url, "limit", "api", "--rate", "1/m", "--burst", "3"});
        EXPECT_EQ(r.status, code::ok) << r.output;
        EXPECT_TRUE(contains(r.output, "allowed " + std::to_string(i))) << r.output;
    }
    const auto refused =
        run(dir, {"--redis", url, "limit", "api", "--rate", "1/m", "--burst", "3"});
    EXPECT_EQ(refused.status, code::no) << refused.output;
    EXPECT_TRUE(contains(refused.output, "retry_after ")) << refused.output;
}

TEST_F(LimitCli, RunsCmdWhenAdmittedAndExitsWithItsStatus) {
    const auto r = run(dir, {"--redis", url, "limit", "job", "--rate", "1/m", "--", "sh", "-c",
                             "echo ran; exit 7"});
    EXPECT_EQ(r.status, 7) << r.output;
    EXPECT_TRUE(contains(r.output, "ran")) << r.output;
    const auto refused =
        run(dir, {"--redis", url, "limit", "job", "--rate", "1/m", "--", "echo", "ran"});
    EXPECT_EQ(refused.status, code::no) << refused.output;
    EXPECT_FALSE(contains(refused.output, "ran\n")) << refused.output;
}

TEST_F(LimitCli, WaitSleepsRetryAfterThenRuns) {
    ASSERT_EQ(run(dir, {"--redis", url, "limit", "w", "--rate", "4/s"}).status, code::ok);
    const auto r = run(
        dir, {"--redis", url, "limit", "w", "--rate", "4/s", "--wait", "5s", "--", "echo", "ran"});
    EXPECT_EQ(r.status, code::ok) << r.output;
    EXPECT_TRUE(contains(r.output, "ran")) << r.output;
    // A wait that cannot cover retry_after gives up at once with 124.
    ASSERT_EQ(run(dir, {"--redis", url, "limit", "h", "--rate", "1/h"}).status, code::ok);
    const auto late = run(dir, {"--redis", url, "limit", "h", "--rate", "1/h", "--wait", "1s"});
    EXPECT_EQ(late.status, code::timed_out) << late.output;
}

TEST_F(LimitCli, BadRatesAndCostsAreUsageErrors) {
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"limit", "x", "--rate", "0/s"},
          std::vector<std::string>{"limit", "x", "--rate", "fast"},
          std::vector<std::string>{"limit", "x", "--rate", "5/s", "--burst", "2", "--cost", "3"},
          std::vector<std::string>{"limit", "a}b", "--rate", "5/s"}}) {
        auto full = args;
        full.insert(full.begin(), {"--redis", url});
        const auto r = run(dir, full);
        EXPECT_EQ(r.status, code::usage) << r.output;
    }
}

TEST_F(LimitCli, LockWithPermitsLetsNRunsHoldAtOnceAndNeverMore) {
    const std::string log = dir.file("log");
    const std::string body = "echo start >> " + log + "; sleep 0.5; echo end >> " + log;
    std::vector<std::unique_ptr<cli_process>> runs;
    for (int i = 0; i < 4; ++i)
        runs.push_back(std::make_unique<cli_process>(
            std::vector<std::string>{"--redis", url, "lock", "slots", "-n", "2", "--ttl", "5s",
                                     "--", "sh", "-c", body},
            dir.file("run" + std::to_string(i))));
    for (auto& r : runs) {
        const auto st = r->wait_for(30s);
        ASSERT_TRUE(st.has_value());
        EXPECT_EQ(*st, 0) << r->output();
    }
    int inside = 0, most = 0;
    for (const auto& l : lines_of(read_file(log))) {
        inside += l == "start" ? 1 : -1;
        most = std::max(most, inside);
    }
    EXPECT_LE(most, 2) << read_file(log);
    EXPECT_EQ(inside, 0);
}

TEST_F(LimitCli, LockWithPermitsTakesOneServerAndNoFair) {
    const auto r = run(dir, {"--redis", url, "lock", "s", "-n", "2", "--fair", "--", "true"});
    EXPECT_EQ(r.status, code::usage) << r.output;
    const auto zero = run(dir, {"--redis", url, "lock", "s", "-n", "0", "--", "true"});
    EXPECT_EQ(zero.status, code::usage) << zero.output;
}
