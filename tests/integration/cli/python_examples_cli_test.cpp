// examples/python: jobs added by the Python producer (the published add script, EVALSHA, wire
// format 1) run on a C++ job_worker and on `redcoord jobs work -- python3 worker.py`. Uses
// Debian's python3 with python3-redis (scripts/bootstrap installs both).
#include "cli_harness.hpp"

#include <redcoord/core/pool.hpp>
#include <redcoord/jobs/job_queue.hpp>
#include <redcoord/jobs/job_worker.hpp>

#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX signal numbers

using namespace cli_test;
using namespace std::chrono_literals;

namespace {

const std::string python = "/usr/bin/python3";
const std::string examples = std::string(REDCOORD_SOURCE_DIR) + "/examples/python";

struct PythonExamples : ::testing::Test {
    redcoord::testing::local_server server;
    temp_dir dir;
    std::string url = server.url();
    redcoord::connection_pool pool{redcoord::parse_endpoint(url)};

    // Runs producer.py with `args`; returns the ids it printed.
    std::vector<std::string> produce(std::vector<std::string> args) {
        static int n = 0;
        args.insert(args.begin(), {python, examples + "/producer.py", "--redis", url});
        redcoord::testing::process_options o;
        o.output_file = dir.file("producer-" + std::to_string(++n) + ".out");
        redcoord::testing::process p(args, o);
        const auto st = p.wait_for(30s);
        EXPECT_EQ(st, std::optional<int>(0)) << read_file(o.output_file);
        return lines_of(read_file(o.output_file));
    }
};

}  // namespace

TEST_F(PythonExamples, ProducerJobsRunOnTheCppWorker) {
    const auto ids = produce({"--queue", "py", "--priority", "4", "one", "two"});
    ASSERT_EQ(ids.size(), 2U);
    redcoord::job_queue q(pool, "py");
    const auto first = q.get(ids[0]);
    ASSERT_TRUE(first.has_value());
    EXPECT_EQ(first->payload, "one");
    EXPECT_EQ(first->priority, 4);
    EXPECT_EQ(first->max_attempts, 3U);
    redcoord::job_worker w(q, [](redcoord::job_context& c) { return "c++ ran " + c.payload(); });
    w.start();
    ASSERT_TRUE(eventually([&] { return q.counts().completed == 2; }, 30s));
    w.stop();
    EXPECT_EQ(q.get(ids[1])->result.value_or(""), "c++ ran two");
    // The id deduplicates across languages too.
    const auto again = produce({"--queue", "py", "--id", ids[0], "three"});
    ASSERT_EQ(again.size(), 1U);
    EXPECT_EQ(again[0], ids[0] + " (already known, completed)");
}

TEST_F(PythonExamples, ProducerJobsRunOnTheCliWorkerWithThePythonHandler) {
    const auto ids = produce({"--queue", "pyw", "--max-attempts", "2", "--backoff-ms", "10",
                              "--fixed", "hello", "fail", "world"});
    ASSERT_EQ(ids.size(), 3U);
    cli_process worker({"--redis", url, "jobs", "work", "pyw", "--concurrency", "2", "--", python,
                        examples + "/worker.py"},
                       dir.file("worker.out"));
    redcoord::job_queue q(pool, "pyw");
    ASSERT_TRUE(eventually(
        [&] {
            const auto n = q.counts();
            return n.completed == 2 && n.dead == 1;
        },
        40s))
        << worker.output();
    const auto hello = q.get(ids[0]);
    EXPECT_EQ(hello->result.value_or(""), "HELLO");
    EXPECT_EQ(hello->progress, "done");
    EXPECT_EQ(q.get(ids[2])->result.value_or(""), "WORLD");
    const auto failed = q.get(ids[1]);
    EXPECT_EQ(failed->state, redcoord::job_state::dead);
    EXPECT_EQ(failed->attempts, 2U);
    EXPECT_EQ(failed->error, "exit status 2: job " + ids[1] + ": asked to fail");
    worker.signal(SIGTERM);
    EXPECT_EQ(worker.wait_for(20s), std::optional<int>(0)) << worker.output();
}
