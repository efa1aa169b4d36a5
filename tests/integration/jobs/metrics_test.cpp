// The jobs metrics and log records move when jobs run (issue 20's catalogue, for the jobs
// part): the per-state gauges sampled at each scrape, attempts settled by outcome, handler run
// times, jobs taken back from stalled workers, a scheduler's ticks, and a record for a job that
// went dead and for stalled jobs taken back.

#include "../metrics_support.hpp"
#include "job_scripts.hpp"

#include <redcoord/core/pool.hpp>
#include <redcoord/jobs/job_queue.hpp>
#include <redcoord/jobs/job_scheduler.hpp>
#include <redcoord/jobs/job_worker.hpp>
#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>

using namespace redcoord;
using namespace std::chrono_literals;
using redcoord::testing::local_server;

namespace {

std::string labelled(const std::string& metric, const std::string& queue, const char* label,
                     const char* value) {
    return metric + "{name=\"" + queue + "\"," + label + "=\"" + value + "\"}";
}

TEST(JobsMetrics, ThePausedGaugeFollowsPauseAndResume) {
    local_server server;
    metrics_test::observed_runtime o;
    connection_pool pool(server.endpoint(), {}, o.rt);
    job_queue q(pool, "m-pause");
    const std::string paused = "redcoord_jobs_paused{name=\"m-pause\"}";
    EXPECT_EQ(o.value(paused), 0);
    ASSERT_TRUE(q.pause());
    EXPECT_EQ(o.value(paused), 1);
    // Another client's pause is seen too: the gauge reads the server, not this object.
    job_queue other(pool, "m-pause");
    ASSERT_TRUE(other.resume());
    EXPECT_EQ(o.value(paused), 0);
}

TEST(JobsMetrics, StateGaugesSettledOutcomesAndRunTimesFollowTheJobs) {
    local_server server;
    metrics_test::observed_runtime o;
    connection_pool pool(server.endpoint(), {}, o.rt);
    job_queue q(pool, "m-jobs");
    auto state = [&](const char* s) {
        return o.value(labelled("redcoord_jobs", "m-jobs", "state", s));
    };
    auto settled = [&](const char* outcome) {
        return o.value_or_zero(
            labelled("redcoord_jobs_settled_total", "m-jobs", "outcome", outcome));
    };
    auto runs = [&](const char* outcome) {
        return o.value_or_zero(
            labelled("redcoord_job_run_seconds_count", "m-jobs", "outcome", outcome));
    };

    job_options once;
    once.max_attempts = 1;
    job_options twice;
    twice.max_attempts = 2;
    twice.backoff = backoff_policy::fixed(0ms);
    job_options later;
    later.delay = 1h;
    (void)q.add("ok");
    (void)q.add("flaky", twice);  // fails its first attempt, then completes
    const auto doomed = q.add("doomed", once);
    (void)q.add("later", later);
    EXPECT_EQ(state("waiting"), 3);
    EXPECT_EQ(state("delayed"), 1);
    EXPECT_EQ(state("active"), 0);
    EXPECT_EQ(state("dead"), 0);

    job_worker w(q, [](job_context& j) -> std::string {
        if (j.payload() == "doomed") throw std::runtime_error("always fails");
        if (j.payload() == "flaky" && j.attempt() == 1) throw std::runtime_error("first try");
        return "done";
    });
    w.start();
    ASSERT_TRUE(metrics_test::eventually([&] { return settled("completed") == 2; }));
    ASSERT_TRUE(metrics_test::eventually([&] { return settled("dead") == 1; }));
    w.stop();
    EXPECT_EQ(settled("retried"), 1);
    EXPECT_EQ(settled("failed"), 0);
    EXPECT_EQ(settled("lost"), 0);
    EXPECT_EQ(runs("completed"), 2);
    EXPECT_EQ(runs("failed"), 2);
    EXPECT_EQ(state("waiting"), 0);
    EXPECT_EQ(state("delayed"), 1);
    EXPECT_EQ(state("completed"), 2);
    EXPECT_EQ(state("dead"), 1);

    const auto records = o.sink->with_message("a job went dead after its last attempt");
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(records[0].component, "jobs");
    EXPECT_EQ(records[0].level, log_level::warning);
    EXPECT_EQ(records[0].fields.at("queue"), "m-jobs");
    EXPECT_EQ(records[0].fields.at("job"), doomed.id);
    EXPECT_EQ(records[0].fields.at("error"), "always fails");
}

// A worker that vanished after its claim: the next worker's claim takes the job back once the
// lease lapsed, counts it and says so once.
TEST(JobsMetrics, JobsTakenBackFromAStalledWorkerAreCountedAndLogged) {
    local_server server;
    metrics_test::observed_runtime o;
    connection_pool pool(server.endpoint(), {}, o.rt);
    job_queue q(pool, "m-stalled");
    (void)q.add("orphan");
    const auto r = detail::job_claim_script().run(
        pool, {"redcoord:jobs:{m-stalled}"},
        {"ghost", "200", "ghost-token", "0.5", "redcoord:jobs:{m-stalled}:wake", "0", "0", "1000"});
    ASSERT_EQ(r.elements().at(0).integer(), 1);
    EXPECT_EQ(o.value(labelled("redcoord_jobs", "m-stalled", "state", "active")), 1);
    job_worker w(q, [](job_context&) { return std::string("rescued"); }, {.poll_timeout = 50ms});
    w.start();
    const std::string stalled = "redcoord_jobs_stalled_total{name=\"m-stalled\"}";
    ASSERT_TRUE(metrics_test::eventually([&] {
        return o.value_or_zero(labelled("redcoord_jobs_settled_total", "m-stalled", "outcome",
                                        "completed")) == 1;
    }));
    w.stop();
    EXPECT_EQ(o.value(stalled), 1);
    const auto records = o.sink->with_message("took back the jobs of stalled workers");
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(records[0].fields.at("queue"), "m-stalled");
    EXPECT_EQ(records[0].fields.at("jobs"), "1");
}

TEST(JobsMetrics, ASchedulersTicksAreCounted) {
    local_server server;
    metrics_test::observed_runtime o;
    connection_pool pool(server.endpoint(), {}, o.rt);
    job_queue q(pool, "m-repeat");
    repeat_options every;
    every.every = 100ms;
    q.repeat("beat", "tick", every);
    job_scheduler s(q, {.identity = "s1", .term = 1000ms});
    s.start();
    ASSERT_TRUE(metrics_test::eventually([&] { return s.ticks_added() >= 3; }));
    s.stop();
    EXPECT_EQ(o.value("redcoord_jobs_ticks_total{name=\"m-repeat\"}"),
              static_cast<double>(s.ticks_added()));
    // The ticks are jobs, and the gauges see them.
    EXPECT_GE(o.value_or_zero(labelled("redcoord_jobs", "m-repeat", "state", "waiting")), 3);
}

// The gauges are sampled by the queue objects: with the last one gone they read 0, and while
// another object of the queue lives it samples them.
TEST(JobsMetrics, GaugesOfAGoneQueueReadZeroUnlessAnotherObjectSamplesThem) {
    local_server server;
    metrics_test::observed_runtime o;
    connection_pool pool(server.endpoint(), {}, o.rt);
    const auto waiting = labelled("redcoord_jobs", "m-gone", "state", "waiting");
    auto survivor = std::make_unique<job_queue>(pool, "m-gone");
    {
        job_queue q(pool, "m-gone");
        (void)q.add("x");
        EXPECT_EQ(o.value(waiting), 1);
    }
    EXPECT_EQ(o.value(waiting), 1);  // sampled again by the survivor
    survivor.reset();
    EXPECT_EQ(o.value(waiting), 0);
}

}  // namespace
