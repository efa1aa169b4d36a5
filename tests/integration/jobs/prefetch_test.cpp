// job_worker_options::prefetch on a real server: batched claims and settlements, and what a
// batch must not change: cancelled jobs never start, stop() gives unstarted jobs back in their
// place, completions are recorded within settle_delay, jobs with a timeout or a deadline never
// wait behind others.

#include "job_scripts.hpp"

#include <redcoord/core/pool.hpp>
#include <redcoord/jobs/job_queue.hpp>
#include <redcoord/jobs/job_worker.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace redcoord;
using namespace std::chrono_literals;
using redcoord::testing::eventually;
using redcoord::testing::local_server;

namespace {

class JobsPrefetch : public ::testing::Test {
protected:
    local_server srv_;
    connection_pool pool_{srv_.endpoint()};

    std::int64_t evalsha_calls() {
        const auto info = srv_.command({"INFO", "commandstats"}).text();
        const auto at = info.find("cmdstat_evalsha:calls=");
        return at == std::string::npos ? 0 : std::stoll(info.substr(at + 22));
    }

    // The EVALSHAs a worker with options `o` sends to run the `n` no-op jobs `q` holds.
    std::int64_t calls_to_run(job_queue& q, std::uint64_t n, const job_worker_options& o) {
        (void)srv_.command({"CONFIG", "RESETSTAT"});
        job_worker w(
            q, [](job_context&) { return std::string(); }, o);
        w.start();
        EXPECT_TRUE(eventually([&] { return q.counts().completed == n; }, 20s));
        w.stop();
        EXPECT_EQ(w.stats().completed, n);
        return evalsha_calls();
    }

    // A handler that records the ids it runs and holds its thread on `held` until `release`.
    struct recorder {
        std::mutex mu;
        std::vector<std::string> ran;
        std::atomic<bool> release{false};
        job_handler holding(std::string held) {
            return [this, held](job_context& j) {
                {
                    std::lock_guard lk(mu);
                    ran.push_back(j.id());
                }
                if (j.id() == held)
                    while (!release) std::this_thread::sleep_for(1ms);
                return std::string("ok");
            };
        }
        std::vector<std::string> runs() {
            std::lock_guard lk(mu);
            return ran;
        }
    };

    // Adds `n` jobs "<prefix><i>" in one batch.
    static void add_many(job_queue& q, const std::string& prefix, int n, job_options o = {}) {
        std::vector<std::pair<std::string, job_options>> batch;
        for (int i = 0; i < n; ++i) {
            o.id = prefix + std::to_string(i);
            batch.emplace_back(o.id, o);
        }
        (void)q.add_batch(batch);
    }
};

}  // namespace

TEST_F(JobsPrefetch, ShortJobsShareTheirCalls) {
    job_queue q(pool_, "share");
    add_many(q, "j", 500);
    (void)srv_.command({"CONFIG", "RESETSTAT"});
    std::atomic<int> ran{0};
    job_worker w(q,
                 [&](job_context&) {
                     ++ran;
                     return std::string();
                 },
                 {.prefetch = 16, .settle_delay = 20ms});
    w.start();
    ASSERT_TRUE(eventually([&] { return q.counts().completed == 500; }, 10s));
    w.stop();
    EXPECT_EQ(ran.load(), 500);
    EXPECT_EQ(w.stats().completed, 500U);
    // One call per job without prefetch; the batches share them.
    EXPECT_LT(evalsha_calls(), 250);
}

// Issue 37: with default options a worker of several threads batches short jobs, one of a
// single thread still sends one call per job.
TEST_F(JobsPrefetch, SeveralThreadsBatchByDefaultOneThreadDoesNot) {
    const auto calls_for_500 = [&](const std::string& name, std::size_t threads) {
        job_queue q(pool_, name);
        add_many(q, "j", 500);
        return calls_to_run(q, 500, {.threads = threads});
    };
    // About one call per job (a claim and each settlement with the next claim) ...
    const auto one = calls_for_500("one-thread", 1);
    EXPECT_GE(one, 450);
    // ... and about one per batch of up to 16 jobs (a thread learns its jobs are short from
    // its first one), plus the heartbeats.
    const auto two = calls_for_500("two-threads", 2);
    EXPECT_LT(two, 250);
    std::printf("calls for 500 jobs: one thread %lld, two threads %lld\n",
                static_cast<long long>(one), static_cast<long long>(two));
}

// With groups taking turns, a batch holds a small group's job behind the rest of it, so a
// worker that batches only by default claims one job at a time there; an explicit prefetch
// still batches.
TEST_F(JobsPrefetch, TheDefaultClaimsOneJobAtATimeWhileGroupsTakeTurns) {
    const auto calls_for_300 = [&](const std::string& name, std::size_t prefetch) {
        job_queue q(pool_, name);
        std::vector<std::pair<std::string, job_options>> jobs;
        for (int i = 0; i < 300; ++i) {
            job_options o;
            o.group = i % 3 == 0 ? "small" : "large";
            jobs.push_back({"j", o});
        }
        (void)q.add_batch(jobs);
        return calls_to_run(q, 300, {.threads = 2, .prefetch = prefetch});
    };
    const auto by_default = calls_for_300("grouped-default", 0);
    EXPECT_GE(by_default, 270);
    const auto batched = calls_for_300("grouped-batched", 16);
    EXPECT_LT(batched, 150);
    std::printf("calls for 300 grouped jobs: default %lld, prefetch 16 %lld\n",
                static_cast<long long>(by_default), static_cast<long long>(batched));
}

TEST_F(JobsPrefetch, StopGivesUnstartedJobsBackInTheirPlace) {
    job_queue q(pool_, "drain");
    add_many(q, "j", 10);
    // j0 runs at once (the thread learns its jobs are short); j1 comes in a batch and holds
    // the thread until stop() was asked.
    recorder rec;
    job_worker w(q, rec.holding("j1"), {.prefetch = 8, .settle_delay = 100ms});
    w.start();
    // Claimed is not started: stop() asked before j1's handler began would give j1 back too.
    ASSERT_TRUE(eventually(
        [&] {
            const auto r = rec.runs();
            return std::find(r.begin(), r.end(), "j1") != r.end();
        },
        5s));
    std::thread stopper([&] { w.stop(); });
    std::this_thread::sleep_for(50ms);
    rec.release = true;
    stopper.join();
    const auto n = q.counts();
    EXPECT_EQ(n.completed, 2U);
    EXPECT_EQ(n.active, 0U);
    EXPECT_EQ(n.waiting, 8U);
    for (int i = 2; i < 10; ++i) {
        const auto j = q.get("j" + std::to_string(i));
        EXPECT_EQ(j->state, job_state::waiting) << i;
        EXPECT_EQ(j->attempts, 0U) << i << ": a released job's attempt is undone";
    }
    // In their place: a new worker runs them in the order they were added.
    job_worker again(q, rec.holding(""));
    again.start();
    ASSERT_TRUE(eventually([&] { return q.counts().completed == 10; }, 5s));
    again.stop();
    const std::vector<std::string> want{"j0", "j1", "j2", "j3", "j4", "j5", "j6", "j7", "j8", "j9"};
    EXPECT_EQ(rec.runs(), want);
}

TEST_F(JobsPrefetch, ACancelledClaimedJobNeverStartsAndACompletionDoesNotWaitForTheBatch) {
    job_queue q(pool_, "cancel");
    add_many(q, "j", 6);
    recorder rec;
    job_worker w(q, rec.holding("j2"), {.prefetch = 8, .settle_delay = 20ms});
    w.start();
    // j1 and j2 come in one batch with the rest: j1's completion is sent by the flusher while
    // j2 holds the thread.
    ASSERT_TRUE(eventually([&] { return q.get("j1")->state == job_state::completed; }, 5s));
    ASSERT_EQ(q.get("j2")->state, job_state::active);
    ASSERT_EQ(q.get("j4")->state, job_state::active) << "j4 is claimed in j2's batch";
    EXPECT_EQ(q.cancel("j4"), job_state::active);
    std::this_thread::sleep_for(50ms);  // the cancel signal reaches the worker
    rec.release = true;
    ASSERT_TRUE(eventually(
        [&] {
            const auto n = q.counts();
            return n.completed == 5 && n.failed == 1;
        },
        5s));
    w.stop();
    EXPECT_EQ(q.get("j4")->state, job_state::failed);
    EXPECT_EQ(q.get("j4")->error, "cancelled");
    const auto ran = rec.runs();
    EXPECT_EQ(std::count(ran.begin(), ran.end(), "j4"), 0) << "a cancelled job started";
}

// Beyond a claim's first job, a job with a timeout (or a deadline) goes back, keeping its
// place, and ends the batch: it would otherwise start late, its timeout already running.
TEST_F(JobsPrefetch, JobsWithATimeoutOrADeadlineAreOnlyClaimedFirst) {
    job_queue q(pool_, "timed");
    (void)q.add("a", {.id = "a"});
    (void)q.add("b", {.id = "b", .timeout = 1s});
    (void)q.add("c", {.id = "c"});
    (void)q.add("d", {.id = "d", .deadline = 10s});
    (void)q.add("e", {.id = "e"});
    auto claim = [&] {
        const auto r = detail::job_claim_script().run(
            pool_, {"redcoord:jobs:{timed}"},
            {"w", "10000", "t", "0.5", "redcoord:jobs:{timed}:wake", "0", "0", "1000", "5"});
        std::vector<std::string> ids;
        for (std::size_t i = 3; i < r.elements().size(); ++i)
            ids.push_back(r.elements()[i].elements().at(0).text());
        return ids;
    };
    EXPECT_EQ(claim(), (std::vector<std::string>{"a"}));
    EXPECT_EQ(claim(), (std::vector<std::string>{"b", "c"}));
    EXPECT_EQ(claim(), (std::vector<std::string>{"d", "e"}));
    EXPECT_EQ(q.counts().active, 5U);
}
