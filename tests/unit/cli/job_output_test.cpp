// job_output: what `redcoord jobs work` makes of a CMD's stdout, stderr and descriptor 3.
#include "job_output.hpp"

#include <gtest/gtest.h>

using redcoord::cli::job_output;
using redcoord::cli::job_stop;

TEST(JobOutput, StdoutIsTheResultUpToTheLimit) {
    job_output o;
    o.out("hello ");
    o.out("world");
    EXPECT_EQ(o.result(), "hello world");
    EXPECT_FALSE(o.result_too_large());
    EXPECT_EQ(o.failure(0, job_stop::none), std::nullopt);
}

TEST(JobOutput, ExactlyTheLimitIsAcceptedOneMoreByteFails) {
    job_output o;
    o.out(std::string(redcoord::cli::max_job_result, 'x'));
    EXPECT_FALSE(o.result_too_large());
    EXPECT_EQ(o.failure(0, job_stop::none), std::nullopt);
    o.out("y");
    EXPECT_TRUE(o.result_too_large());
    EXPECT_EQ(o.result().size(), redcoord::cli::max_job_result);
    const auto f = o.failure(0, job_stop::none);
    ASSERT_TRUE(f.has_value());
    EXPECT_NE(f->find("result too large"), std::string::npos) << *f;
    EXPECT_NE(f->find(std::to_string(redcoord::cli::max_job_result + 1)), std::string::npos) << *f;
}

TEST(JobOutput, FailureNamesTheStatusAndTheEndOfStderr) {
    job_output o;
    o.err(std::string(2000, 'a'));
    o.err("\nboom: disk full\n");
    const auto f = o.failure(3, job_stop::none);
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(f->substr(0, 15), "exit status 3: ");
    EXPECT_EQ(f->substr(f->size() - 15), "boom: disk full");
    EXPECT_LE(o.stderr_tail().size(), redcoord::cli::job_stderr_tail);
    job_output quiet;
    EXPECT_EQ(quiet.failure(1, job_stop::none), "exit status 1");
}

TEST(JobOutput, AStoppedCmdFailsWhateverItsStatus) {
    job_output o;
    o.out("partial");
    EXPECT_EQ(o.failure(0, job_stop::timed_out), "timed out: CMD was stopped (exit status 0)");
    EXPECT_EQ(o.failure(143, job_stop::stopped),
              "cancelled or lease lost: CMD was stopped (exit status 143)");
    EXPECT_EQ(o.failure(137, job_stop::drained),
              "the worker stopped: CMD was stopped (exit status 137)");
}

TEST(JobOutput, ProgressLinesAcrossReadsAndOtherLinesIgnored) {
    job_output o;
    EXPECT_EQ(o.progress("progress 1"), std::nullopt);  // no newline yet
    EXPECT_EQ(o.progress("0%\r\nprogress 20%\nhello\n"), "20%");
    EXPECT_EQ(o.progress("noise\nprogr"), std::nullopt);
    EXPECT_EQ(o.progress("ess done\n"), "done");
    EXPECT_EQ(o.progress("progress \n"), "");
}

TEST(JobOutput, AnOverlongProgressLineIsSkippedWhole) {
    job_output o;
    EXPECT_EQ(o.progress("progress " + std::string(redcoord::cli::max_progress_line, 'x')),
              std::nullopt);
    EXPECT_EQ(o.progress("still the long line\nprogress ok\n"), "ok");
}
