// job_queue and job_worker on a real server: results, priorities, delays, retries with back-off
// to the dead set and back, de-duplication by id, deadlines, cancellation, timeouts, a stalled
// job of a vanished worker, progress, and bad options.

#include "job_scripts.hpp"
#include "jobs_fixture.hpp"

#include <redcoord/core/errors.hpp>
#include <redcoord/core/holder_label.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/core/replication.hpp>
#include <redcoord/jobs/inspect.hpp>
#include <redcoord/jobs/job_events.hpp>
#include <redcoord/jobs/job_queue.hpp>
#include <redcoord/jobs/job_scheduler.hpp>
#include <redcoord/jobs/job_worker.hpp>
#include <redcoord/signaling/signal_hub.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

using namespace redcoord;
using namespace std::chrono_literals;
using redcoord::testing::eventually;
using redcoord::testing::local_server;
using steady = std::chrono::steady_clock;

namespace {

class Jobs : public jobs_test::fixture {};

}  // namespace

TEST_F(Jobs, RunsToCompletionAndKeepsTheResult) {
    job_queue q(pool_, "basic");
    const auto a = q.add("hello");
    EXPECT_TRUE(a.added);
    EXPECT_EQ(a.state, job_state::waiting);
    EXPECT_EQ(q.counts().waiting, 1U);
    job_worker w(q, [](job_context& j) { return "done:" + j.payload(); });
    w.start();
    ASSERT_TRUE(reaches(q, a.id, job_state::completed));
    const auto j = q.get(a.id);
    EXPECT_EQ(j->result, "done:hello");
    EXPECT_EQ(j->attempts, 1U);
    EXPECT_EQ(j->worker, w.id());
    w.stop();
    EXPECT_EQ(w.stats().completed, 1U);
    const auto n = q.counts();
    EXPECT_EQ(n.completed, 1U);
    EXPECT_EQ(n.waiting + n.active + n.delayed, 0U);
}

// Holder labels (issue 38): the job records which worker ran it, by the worker's label
// (<host>:<pid> by default).
TEST_F(Jobs, TheJobNamesItsWorkerByTheWorkersLabel) {
    job_queue q(pool_, "labelled");
    const auto a = q.add("x");
    const auto b = q.add("y");
    {
        job_worker w(q, [](job_context&) { return std::string("ok"); }, {.label = "etl-3"});
        w.start();
        ASSERT_TRUE(reaches(q, a.id, job_state::completed));
        ASSERT_TRUE(reaches(q, b.id, job_state::completed));
        EXPECT_EQ(holder_label_of(q.get(a.id)->worker), "etl-3");
    }
    const auto c = q.add("z");
    job_worker d(q, [](job_context&) { return std::string("ok"); });
    d.start();
    ASSERT_TRUE(reaches(q, c.id, job_state::completed));
    EXPECT_EQ(holder_label_of(q.get(c.id)->worker), default_holder_label());
    EXPECT_THROW(job_worker(q, [](job_context&) { return std::string(); }, {.label = "a\nb"}),
                 invalid_argument);
}

TEST_F(Jobs, HighestPriorityFirstAndFifoWithinALevel) {
    job_queue q(pool_, "prio");
    std::vector<std::pair<std::string, job_options>> batch;
    for (int i = 0; i < 40; ++i) {
        job_options o;
        o.priority = (i * 7) % 10;
        batch.emplace_back(std::to_string(i), o);
    }
    const auto added = q.add_batch(batch);
    ASSERT_EQ(added.size(), 40U);
    std::mutex mu;
    std::vector<int> order;
    job_worker w(q, [&](job_context& j) {
        std::lock_guard lk(mu);
        order.push_back(std::stoi(j.payload()));
        return std::string();
    });
    w.start();
    ASSERT_TRUE(eventually([&] { return w.stats().completed == 40; }, 10s));
    w.stop();
    ASSERT_EQ(order.size(), 40U);
    for (std::size_t i = 1; i < order.size(); ++i) {
        const int p0 = (order[i - 1] * 7) % 10, p1 = (order[i] * 7) % 10;
        EXPECT_TRUE(p0 > p1 || (p0 == p1 && order[i - 1] < order[i]))
            << order[i - 1] << " before " << order[i];
    }
}

TEST_F(Jobs, ADelayedJobStartsNoSoonerThanItsDelay) {
    job_queue q(pool_, "delay");
    std::atomic<std::int64_t> started_ns{0};
    job_worker w(q, [&](job_context&) {
        started_ns = steady::now().time_since_epoch().count();
        return std::string();
    });
    w.start();
    const auto before = steady::now();
    const auto a = q.add("later", {.delay = 300ms});
    EXPECT_EQ(a.state, job_state::delayed);
    ASSERT_TRUE(reaches(q, a.id, job_state::completed));
    w.stop();
    const auto waited = steady::duration(started_ns.load()) - before.time_since_epoch();
    // The server's millisecond clock decides: allow its rounding.
    EXPECT_GE(waited, 299ms);
}

TEST_F(Jobs, FailedAttemptsBackOffThenGoDeadAndRetryBringsThemBack) {
    job_queue q(pool_, "retry");
    std::mutex mu;
    std::vector<steady::time_point> attempts;
    std::atomic<bool> heal{false};
    job_worker w(q, [&](job_context&) -> std::string {
        {
            std::lock_guard lk(mu);
            attempts.push_back(steady::now());
        }
        if (!heal) throw std::runtime_error("boom");
        return "healed";
    });
    w.start();
    job_options o;
    o.max_attempts = 3;
    o.backoff = backoff_policy::exponential(100ms, 1s);
    const auto a = q.add("x", o);
    ASSERT_TRUE(reaches(q, a.id, job_state::dead));
    auto j = q.get(a.id);
    EXPECT_EQ(j->attempts, 3U);
    EXPECT_EQ(j->error, "boom");
    EXPECT_EQ(q.counts().dead, 1U);
    {
        std::lock_guard lk(mu);
        ASSERT_EQ(attempts.size(), 3U);
        // Back-off 100 ms, then 200 ms. An idle worker sleeps until the due time, so each
        // retry also starts soon after it (the upper bounds leave room for a loaded machine).
        EXPECT_GE(attempts[1] - attempts[0], 99ms);
        EXPECT_LE(attempts[1] - attempts[0], 400ms);
        EXPECT_GE(attempts[2] - attempts[1], 199ms);
        EXPECT_LE(attempts[2] - attempts[1], 500ms);
    }
    heal = true;
    EXPECT_TRUE(q.retry(a.id));
    EXPECT_FALSE(q.retry(a.id));  // waiting now: nothing to retry
    ASSERT_TRUE(reaches(q, a.id, job_state::completed));
    EXPECT_EQ(q.get(a.id)->result, "healed");
    EXPECT_EQ(q.get(a.id)->attempts, 1U);
    w.stop();
    EXPECT_EQ(w.stats().failed, 3U);
}

// With jitter j the server draws each delay from [d * (1 - j), d] (backoff_policy::delay()).
TEST_F(Jobs, JitteredBackOffsStayWithinTheirBounds) {
    job_queue q(pool_, "jitter");
    std::mutex mu;
    std::vector<steady::time_point> attempts;
    job_worker w(q, [&](job_context&) -> std::string {
        std::lock_guard lk(mu);
        attempts.push_back(steady::now());
        throw std::runtime_error("again");
    });
    w.start();
    job_options o;
    o.max_attempts = 7;
    o.backoff = backoff_policy::fixed(200ms);
    o.backoff.jitter = 0.5;
    const auto a = q.add("x", o);
    ASSERT_TRUE(reaches(q, a.id, job_state::dead, 10s));
    w.stop();
    std::lock_guard lk(mu);
    ASSERT_EQ(attempts.size(), 7U);
    auto shortest = steady::duration::max(), longest = steady::duration::zero();
    for (std::size_t i = 1; i < attempts.size(); ++i) {
        const auto gap = attempts[i] - attempts[i - 1];
        EXPECT_GE(gap, 99ms) << i;
        EXPECT_LE(gap, 500ms) << i;
        shortest = std::min(shortest, gap);
        longest = std::max(longest, gap);
    }
    // Six draws from a 100 ms range: they are not all the same delay.
    EXPECT_GE(longest - shortest, 5ms);
}

TEST_F(Jobs, RemoveDeletesAnyJobButAnActiveOne) {
    job_queue q(pool_, "remove");
    (void)q.add("w", {.id = "waiting"});
    (void)q.add("d", {.id = "delayed", .delay = 1h});
    (void)q.add("f", {.id = "failed"});
    EXPECT_EQ(q.cancel("failed"), job_state::waiting);
    EXPECT_EQ(q.remove("waiting"), job_state::waiting);
    EXPECT_EQ(q.remove("delayed"), job_state::delayed);
    EXPECT_EQ(q.remove("failed"), job_state::failed);
    EXPECT_EQ(q.remove("waiting"), std::nullopt);
    EXPECT_FALSE(q.get("waiting"));
    const auto n = q.counts();
    EXPECT_EQ(n.waiting + n.delayed + n.failed, 0U);
    // An active job stays; a completed one goes with its result.
    std::atomic<bool> release{false};
    job_worker w(q, [&](job_context& j) {
        while (j.id() == "busy" && !release) std::this_thread::sleep_for(1ms);
        return std::string("result");
    });
    w.start();
    (void)q.add("b", {.id = "busy"});
    ASSERT_TRUE(reaches(q, "busy", job_state::active));
    EXPECT_EQ(q.remove("busy"), job_state::active);
    EXPECT_EQ(state_of(q, "busy"), job_state::active);
    release = true;
    ASSERT_TRUE(reaches(q, "busy", job_state::completed));
    w.stop();
    EXPECT_EQ(q.remove("busy"), job_state::completed);
    EXPECT_EQ(pool_.command({"EXISTS", "redcoord:jobs:{remove}:result:busy"}).integer(), 0);
    EXPECT_EQ(q.counts().completed, 0U);
    EXPECT_THROW((void)q.remove(""), invalid_argument);
}

TEST_F(Jobs, CleanDeletesFinishedJobsOlderThanTheCutoffUpToTheLimit) {
    job_queue q(pool_, "clean");
    for (int i = 0; i < 5; ++i) {
        const auto id = "old" + std::to_string(i);
        (void)q.add("x", {.id = id});
        (void)q.cancel(id);  // failed
    }
    std::this_thread::sleep_for(300ms);
    (void)q.add("x", {.id = "new"});
    (void)q.cancel("new");
    EXPECT_EQ(q.counts().failed, 6U);
    EXPECT_EQ(q.clean(job_state::failed, 200ms, 2), 2U);
    EXPECT_FALSE(q.get("old0"));  // oldest first
    EXPECT_FALSE(q.get("old1"));
    EXPECT_EQ(q.clean(job_state::failed, 200ms), 3U);
    EXPECT_EQ(q.counts().failed, 1U);
    EXPECT_TRUE(q.get("new"));
    EXPECT_EQ(q.clean(job_state::failed, 0ms), 1U);
    EXPECT_EQ(q.clean(job_state::dead, 0ms), 0U);
    EXPECT_THROW((void)q.clean(job_state::waiting, 0ms), invalid_argument);
    EXPECT_THROW((void)q.clean(job_state::failed, -1ms), invalid_argument);
}

// A completed job stays readable for keep_completed; then its hash expires and the claims'
// housekeeping drops it from the index.
TEST_F(Jobs, CompletedJobsLeaveAfterKeepCompleted) {
    job_queue_options o;
    o.keep_completed = 300ms;
    job_queue q(pool_, "kept", o);
    job_worker w(q, [](job_context&) { return std::string("r"); }, {.poll_timeout = 50ms});
    w.start();
    const auto a = q.add("x");
    ASSERT_TRUE(reaches(q, a.id, job_state::completed));
    EXPECT_EQ(q.counts().completed, 1U);
    EXPECT_TRUE(eventually([&] { return q.counts().completed == 0; }, 3s));
    EXPECT_FALSE(q.get(a.id));
    // Its id is free again.
    EXPECT_TRUE(q.add("again", {.id = a.id}).added);
    w.stop();
}

// A job hash this version did not write (its options field garbled): the worker counts the
// claim's failure in last_error() and goes on; the job lapses and ends dead; others run.
TEST_F(Jobs, AMalformedJobIsAnErrorNotTheEndOfTheWorker) {
    job_queue q(pool_, "garbled");
    (void)q.add("x", {.id = "bad"});
    (void)pool_.command({"HSET", "redcoord:jobs:{garbled}:job:bad", "o", "garbage"});
    job_worker w(q, [](job_context&) { return std::string("ok"); },
                 {.lease = 300ms, .poll_timeout = 50ms, .retry_delay = 10ms});
    w.start();
    ASSERT_TRUE(eventually([&] { return w.last_error() != nullptr; }, 5s));
    EXPECT_THROW(std::rethrow_exception(w.last_error()), error);
    (void)q.add("y", {.id = "good"});
    EXPECT_TRUE(reaches(q, "good", job_state::completed));
    // get() refuses the garbled job with a typed error; its state is readable as is.
    EXPECT_THROW((void)q.get("bad"), error);
    EXPECT_TRUE(eventually(
        [&] {
            return pool_.command({"HGET", "redcoord:jobs:{garbled}:job:bad", "state"}).text() ==
                   "dead";
        },
        5s));
    w.stop();
}

// With replicas = 1 an add waits for the replica (WAIT); a paused replica makes it a
// replication_timeout, and the master keeps the job.
TEST(JobsReplicated, AnUnconfirmedAddIsAReplicationTimeoutAndTheMasterKeepsTheJob) {
    redcoord::testing::master_and_replica set;
    job_queue_options o;
    o.replication.replicas = 1;
    o.replication.timeout = 100ms;
    job_queue q(set.pool, "confirmed", o);
    EXPECT_TRUE(q.add("x", {.id = "before"}).added);
    set.replica->pause();
    try {
        (void)q.add("x", {.id = "paused"});
        ADD_FAILURE() << "no replication_timeout";
    } catch (const replication_timeout& e) {
        EXPECT_EQ(e.acknowledged(), 0U);
        EXPECT_EQ(e.required(), 1U);
        EXPECT_NE(std::string(e.what()).find("add to 'confirmed'"), std::string::npos) << e.what();
    }
    EXPECT_EQ(q.get("paused")->state, job_state::waiting);
}

TEST_F(Jobs, AKnownIdAddsNothing) {
    job_queue q(pool_, "dedup");
    const auto first = q.add("one", {.id = "order-42"});
    EXPECT_TRUE(first.added);
    EXPECT_EQ(first.id, "order-42");
    const auto again = q.add("two", {.id = "order-42"});
    EXPECT_FALSE(again.added);
    EXPECT_EQ(again.state, job_state::waiting);
    job_worker w(q, [](job_context& j) { return j.payload(); });
    w.start();
    ASSERT_TRUE(reaches(q, "order-42", job_state::completed));
    w.stop();
    // Completed and still kept: still a duplicate.
    EXPECT_FALSE(q.add("three", {.id = "order-42"}).added);
    EXPECT_EQ(q.get("order-42")->result, "one");
    EXPECT_EQ(q.counts().completed, 1U);
}

TEST_F(Jobs, AJobPastItsDeadlineNeverStarts) {
    job_queue q(pool_, "deadline");
    std::atomic<int> runs{0};
    job_worker w(q, [&](job_context&) {
        ++runs;
        return std::string();
    });
    w.start();
    const auto a = q.add("stale", {.delay = 300ms, .deadline = 100ms});
    ASSERT_TRUE(reaches(q, a.id, job_state::failed));
    EXPECT_NE(q.get(a.id)->error.find("deadline"), std::string::npos);
    const auto b = q.add("fresh", {.delay = 50ms, .deadline = 5s});
    ASSERT_TRUE(reaches(q, b.id, job_state::completed));
    w.stop();
    EXPECT_EQ(runs.load(), 1);
}

TEST_F(Jobs, CancelFailsAWaitingJobAndStopsARunningOne) {
    job_queue q(pool_, "cancel");
    const auto waiting = q.add("w", {.delay = 10s});
    EXPECT_EQ(q.cancel(waiting.id), job_state::delayed);
    EXPECT_EQ(state_of(q, waiting.id), job_state::failed);
    EXPECT_EQ(q.get(waiting.id)->error, "cancelled");
    EXPECT_FALSE(q.cancel("no-such-job"));

    std::atomic<bool> running{false}, saw_stop{false};
    job_worker w(q, [&](job_context& j) -> std::string {
        running = true;
        for (auto until = steady::now() + 10s; steady::now() < until;) {
            if (j.stop_token().stop_requested()) {
                saw_stop = true;
                throw std::runtime_error("stopped");
            }
            std::this_thread::sleep_for(5ms);
        }
        return "not cancelled";
    });
    w.start();
    const auto active = q.add("a", {.max_attempts = 5});
    ASSERT_TRUE(eventually([&] { return running.load(); }, 5s));
    EXPECT_EQ(q.cancel(active.id), job_state::active);
    ASSERT_TRUE(reaches(q, active.id, job_state::failed));
    EXPECT_TRUE(saw_stop);
    EXPECT_EQ(q.get(active.id)->error, "cancelled");  // not retried despite attempts left
    EXPECT_TRUE(q.retry(active.id));                  // a failed job may be retried by hand
    w.stop();
}

TEST_F(Jobs, ATimeoutFiresTheStopTokenAndTheJobIsRetried) {
    job_queue q(pool_, "timeout");
    std::atomic<int> calls{0};
    job_worker w(q,
                 [&](job_context& j) -> std::string {
                     if (++calls == 1) {
                         // Ignores nothing: waits for the token, which the timeout fires.
                         while (!j.stop_token().stop_requested()) std::this_thread::sleep_for(2ms);
                         throw std::runtime_error("timed out");
                     }
                     return "second time lucky";
                 },
                 {.timeout_margin = 100ms});
    w.start();
    job_options o;
    o.timeout = 400ms;
    o.backoff = backoff_policy::fixed(0ms);
    const auto a = q.add("slow", o);
    ASSERT_TRUE(reaches(q, a.id, job_state::completed));
    EXPECT_EQ(q.get(a.id)->attempts, 2U);
    EXPECT_EQ(q.get(a.id)->result, "second time lucky");
    w.stop();
}

// A worker that vanished (claimed, then never heard of again): its job stalls when its lease
// lapses and the next claim retries it.
TEST_F(Jobs, AVanishedWorkersJobIsReclaimedAndRetried) {
    job_queue q(pool_, "stalled");
    job_options o;
    o.backoff = backoff_policy::fixed(0ms);
    const auto a = q.add("orphan", o);
    const auto r = detail::job_claim_script().run(
        pool_, {"redcoord:jobs:{stalled}"},
        {"ghost", "200", "ghost-token", "0.5", "redcoord:jobs:{stalled}:wake", "0", "0", "1000"});
    ASSERT_EQ(r.elements().at(0).integer(), 1);
    EXPECT_EQ(state_of(q, a.id), job_state::active);
    job_worker w(q,
                 [](job_context& j) { return "rescued at attempt " + std::to_string(j.attempt()); },
                 {.poll_timeout = 50ms});
    w.start();
    ASSERT_TRUE(reaches(q, a.id, job_state::completed));
    EXPECT_EQ(q.get(a.id)->result, "rescued at attempt 2");
    w.stop();
    // The ghost's late completion is refused: its token no longer holds the job.
    const auto late = detail::job_settle_script().run(
        pool_, {"redcoord:jobs:{stalled}"},
        {"1000", "1000", "redcoord:jobs:{stalled}:events", "redcoord:jobs:{stalled}:wake", "0", "1",
         "c", a.id, "ghost-token", "late", "x", ""});
    EXPECT_EQ(late.elements().at(0).elements().at(0).integer(), 0);
    EXPECT_EQ(q.get(a.id)->result, "rescued at attempt 2");
}

// A lapsed lease is the next claim's to take back, never the heartbeat's to renew. A worker cut
// off past its lease has fired its job's stop token; heartbeats it sent meanwhile may still
// reach the server when the link comes back (they waited in a socket's buffer), and must not
// make the job its own again for another lease.
TEST_F(Jobs, F7_AHeartbeatDoesNotReviveALapsedLease) {
    job_queue q(pool_, "lapsed");
    job_options o;
    o.backoff = backoff_policy::fixed(0ms);
    const auto a = q.add("orphan", o);
    const auto r = detail::job_claim_script().run(
        pool_, {"redcoord:jobs:{lapsed}"},
        {"ghost", "200", "ghost-token", "0.5", "redcoord:jobs:{lapsed}:wake", "0", "0", "1000"});
    ASSERT_EQ(r.elements().at(0).integer(), 1);
    const auto renew = [&] {
        return detail::job_heartbeat_script()
            .run(pool_, {"redcoord:jobs:{lapsed}"}, {"200", a.id, "ghost-token"})
            .elements()
            .at(0)
            .integer();
    };
    EXPECT_EQ(renew(), 1);  // within the lease
    std::this_thread::sleep_for(300ms);
    EXPECT_EQ(renew(), 0) << "a heartbeat renewed a lease that had lapsed";
    EXPECT_EQ(state_of(q, a.id), job_state::active);  // nobody has taken it back yet
    job_worker w(q, [](job_context& j) { return "attempt " + std::to_string(j.attempt()); },
                 {.poll_timeout = 50ms});
    w.start();
    ASSERT_TRUE(reaches(q, a.id, job_state::completed));
    EXPECT_EQ(q.get(a.id)->result, "attempt 2");
    w.stop();
}

// Redis keeps the writes a script made before an error: a script that takes a job out of one
// index before it puts it in the next loses it (in no index, nothing runs or lists it again)
// when the second write fails. Each test below makes that write fail with a destination that
// holds a string (WRONGTYPE) and checks that the job is still where it was, then that it
// carries on once the key is repaired.
TEST_F(Jobs, CancelThatFailsLosesNothing) {
    job_queue q(pool_, "cancelfail");
    const auto a = q.add("later", {.delay = 10s});
    ASSERT_EQ(srv_.command({"SET", "redcoord:jobs:{cancelfail}:failed", "x"}).text(), "OK");
    EXPECT_THROW((void)q.cancel(a.id), reply_error);
    EXPECT_EQ(srv_.command({"ZCARD", "redcoord:jobs:{cancelfail}:delayed"}).integer(), 1)
        << "a cancel that failed lost the job";
    ASSERT_EQ(srv_.command({"DEL", "redcoord:jobs:{cancelfail}:failed"}).integer(), 1);
    EXPECT_EQ(q.cancel(a.id), job_state::delayed);
    EXPECT_EQ(state_of(q, a.id), job_state::failed);
}

TEST_F(Jobs, RetryThatFailsLosesNothing) {
    job_queue q(pool_, "retryfail");
    const auto a = q.add("later", {.delay = 10s});
    ASSERT_EQ(q.cancel(a.id), job_state::delayed);
    ASSERT_EQ(srv_.command({"SET", "redcoord:jobs:{retryfail}:waiting", "x"}).text(), "OK");
    EXPECT_THROW((void)q.retry(a.id), reply_error);
    EXPECT_EQ(srv_.command({"ZCARD", "redcoord:jobs:{retryfail}:failed"}).integer(), 1)
        << "a retry that failed lost the job";
    ASSERT_EQ(srv_.command({"DEL", "redcoord:jobs:{retryfail}:waiting"}).integer(), 1);
    EXPECT_TRUE(q.retry(a.id));
    EXPECT_EQ(state_of(q, a.id), job_state::waiting);
}

TEST_F(Jobs, PromotingADueJobThatFailsLosesNothing) {
    job_queue q(pool_, "duefail");
    const auto a = q.add("soon", {.delay = 50ms});
    std::this_thread::sleep_for(100ms);
    ASSERT_EQ(srv_.command({"SET", "redcoord:jobs:{duefail}:waiting", "x"}).text(), "OK");
    EXPECT_THROW(
        (void)detail::job_claim_script().run(
            pool_, {"redcoord:jobs:{duefail}"},
            {"w", "1000", "token", "0.5", "redcoord:jobs:{duefail}:wake", "0", "0", "1000"}),
        reply_error);
    EXPECT_EQ(srv_.command({"ZCARD", "redcoord:jobs:{duefail}:delayed"}).integer(), 1)
        << "a promotion that failed lost the job";
    ASSERT_EQ(srv_.command({"DEL", "redcoord:jobs:{duefail}:waiting"}).integer(), 1);
    job_worker w(q, [](job_context&) { return std::string("ran"); }, {.poll_timeout = 50ms});
    w.start();
    ASSERT_TRUE(reaches(q, a.id, job_state::completed));
    w.stop();
}

TEST_F(Jobs, ReclaimingAStalledJobThatFailsLosesNothing) {
    job_queue q(pool_, "stalledfail");
    job_options o;
    o.backoff = backoff_policy::fixed(0ms);
    const auto a = q.add("orphan", o);
    const auto claim = [&] {
        return detail::job_claim_script().run(
            pool_, {"redcoord:jobs:{stalledfail}"},
            {"ghost", "200", "ghost-token", "0.5", "redcoord:jobs:{stalledfail}:wake", "0", "0",
             "1000"});
    };
    ASSERT_EQ(claim().elements().at(0).integer(), 1);
    std::this_thread::sleep_for(300ms);
    ASSERT_EQ(srv_.command({"SET", "redcoord:jobs:{stalledfail}:waiting", "x"}).text(), "OK");
    EXPECT_THROW((void)claim(), reply_error);
    EXPECT_EQ(srv_.command({"ZCARD", "redcoord:jobs:{stalledfail}:active"}).integer(), 1)
        << "a reclaim that failed lost the job";
    ASSERT_EQ(srv_.command({"DEL", "redcoord:jobs:{stalledfail}:waiting"}).integer(), 1);
    job_worker w(q,
                 [](job_context& j) { return "rescued at attempt " + std::to_string(j.attempt()); },
                 {.poll_timeout = 50ms});
    w.start();
    ASSERT_TRUE(reaches(q, a.id, job_state::completed));
    EXPECT_EQ(q.get(a.id)->result, "rescued at attempt 2");
    w.stop();
}

TEST_F(Jobs, AClaimThatFailsLosesNothing) {
    job_queue q(pool_, "claimfail");
    const auto a = q.add("ready");
    ASSERT_EQ(srv_.command({"SET", "redcoord:jobs:{claimfail}:active", "x"}).text(), "OK");
    // A settlement call with nothing to settle claims without the housekeeping (which would
    // stumble on :active first), as a worker's claim right after a settlement does.
    EXPECT_THROW((void)detail::job_settle_script().run(
                     pool_, {"redcoord:jobs:{claimfail}"},
                     {"1000", "1000", "redcoord:jobs:{claimfail}:events",
                      "redcoord:jobs:{claimfail}:wake", "0", "0", "1", "w", "1000", "token", "0.5",
                      "redcoord:jobs:{claimfail}:wake", "0", "0", "1000"}),
                 reply_error);
    EXPECT_EQ(srv_.command({"ZCARD", "redcoord:jobs:{claimfail}:waiting"}).integer(), 1)
        << "a claim that failed lost the job";
    ASSERT_EQ(srv_.command({"DEL", "redcoord:jobs:{claimfail}:active"}).integer(), 1);
    job_worker w(q, [](job_context& j) { return "attempt " + std::to_string(j.attempt()); },
                 {.poll_timeout = 50ms});
    w.start();
    ASSERT_TRUE(reaches(q, a.id, job_state::completed));
    EXPECT_EQ(q.get(a.id)->result, "attempt 1") << "the failed claim counted an attempt";
    w.stop();
}

TEST_F(Jobs, ASettlementThatFailsLosesNothing) {
    job_queue q(pool_, "settlefail");
    job_options o;
    o.backoff = backoff_policy::fixed(0ms);
    const auto a = q.add("claimed", o);
    const auto r = detail::job_claim_script().run(
        pool_, {"redcoord:jobs:{settlefail}"},
        {"w", "60000", "token", "0.5", "redcoord:jobs:{settlefail}:wake", "0", "0", "1000"});
    ASSERT_EQ(r.elements().at(0).integer(), 1);
    const auto settle = [&](const char* kind) {
        return detail::job_settle_script().run(
            pool_, {"redcoord:jobs:{settlefail}"},
            {"1000", "1000", "redcoord:jobs:{settlefail}:events", "redcoord:jobs:{settlefail}:wake",
             "0", "1", kind, a.id, "token", "text", "x", "0.5"});
    };
    for (const char* kind : {"c", "f"}) {
        const auto key =
            std::string("redcoord:jobs:{settlefail}:") + (kind[0] == 'c' ? "completed" : "waiting");
        ASSERT_EQ(srv_.command({"SET", key, "x"}).text(), "OK");
        EXPECT_THROW((void)settle(kind), reply_error) << kind;
        EXPECT_EQ(srv_.command({"ZCARD", "redcoord:jobs:{settlefail}:active"}).integer(), 1)
            << "a settlement ('" << kind << "') that failed lost the job";
        EXPECT_EQ(state_of(q, a.id), job_state::active) << kind;
        ASSERT_EQ(srv_.command({"DEL", key}).integer(), 1);
    }
    EXPECT_EQ(settle("c").elements().at(0).elements().at(0).integer(), 1);
    EXPECT_EQ(state_of(q, a.id), job_state::completed);
    EXPECT_EQ(q.get(a.id)->result, "text");
}

// A settlement's claim that skips the housekeeping (as a worker's next claim does) also skips
// the pause, group and parent checks when none of their keys exists (one EXISTS for all):
// each must still be seen when its key does.
TEST_F(Jobs, ASettlementsQuickClaimStillSeesAPauseAndAReleasedParent) {
    job_queue q(pool_, "quick");
    const std::string base = "redcoord:jobs:{quick}", wake = base + ":wake";
    const auto claim = [&](const std::string& token) {
        return detail::job_claim_script().run(pool_, {base},
                                              {"w", "60000", token, "0.5", wake, "0", "0", "1000"});
    };
    // Completes `id` held under `token`, and claims under `next` in the same call.
    const auto complete_and_claim = [&](const std::string& id, const std::string& token,
                                        const std::string& next) {
        return detail::job_settle_script().run(
            pool_, {base},
            {"1000", "60000", base + ":events", wake, "0",   "1",  "c", id,  token, "", "x", "",
             "1",    "w",     "60000",          next, "0.5", wake, "0", "0", "1000"});
    };
    const auto a = q.add("a", {.id = "a"});
    const auto parent = q.add("p", {.id = "p", .depends_on = {"a"}});
    ASSERT_EQ(claim("t1").elements().at(0).integer(), 1);
    // The parent waits for "a": completing "a" releases it, and the same call claims it.
    auto r = complete_and_claim("a", "t1", "t2").elements();
    ASSERT_EQ(r.at(0).elements().at(0).integer(), 1);
    ASSERT_EQ(r.at(1).elements().at(0).integer(), 1) << "the released parent was not claimed";
    EXPECT_EQ(r.at(1).elements().at(3).elements().at(0).text(), "p");
    // A paused queue: the completion is written, the claim hands out nothing.
    (void)q.add("b", {.id = "b"});
    ASSERT_TRUE(q.pause());
    r = complete_and_claim("p", "t2", "t3").elements();
    EXPECT_EQ(r.at(0).elements().at(0).integer(), 1);
    EXPECT_EQ(r.at(1).elements().at(0).integer(), 0) << "a paused queue handed out a job";
    EXPECT_EQ(state_of(q, "b"), job_state::waiting);
    EXPECT_EQ(state_of(q, "p"), job_state::completed);
}

TEST_F(Jobs, ProgressIsStoredWithTheJob) {
    job_queue q(pool_, "progress");
    std::atomic<bool> reported{false}, release{false};
    job_worker w(q, [&](job_context& j) {
        EXPECT_TRUE(j.report_progress("50%"));
        reported = true;
        while (!release) std::this_thread::sleep_for(2ms);
        return std::string("ok");
    });
    w.start();
    const auto a = q.add("p");
    ASSERT_TRUE(eventually([&] { return reported.load(); }, 5s));
    EXPECT_EQ(q.get(a.id)->progress, "50%");
    EXPECT_EQ(q.get(a.id)->state, job_state::active);
    release = true;
    ASSERT_TRUE(reaches(q, a.id, job_state::completed));
    w.stop();
}

// Issue 33: the progress event is published through the worker's signal hub; one above the
// hub's max_payload (8 MiB) would disconnect every event listener (client-output-buffer-limit
// pubsub) and be lost, so it is refused before anything is sent: neither stored nor announced.
TEST_F(Jobs, OversizedProgressIsRefusedBeforeSending) {
    job_queue q(pool_, "bigprogress");
    signal_hub hub(pool_);
    job_events events(q, hub);
    std::atomic<int> progress_events{0};
    auto conn = events.on([&](const job_event& e) {
        if (e.kind == job_event_kind::progress) ++progress_events;
    });
    std::atomic<bool> refused{false}, small{false};
    job_worker w(q, [&](job_context& j) {
        try {
            (void)j.report_progress(std::string((std::size_t{8} << 20) + 1, 'p'));
        } catch (const payload_too_large&) {
            refused = true;
        }
        small = j.report_progress("small");
        return std::string("ok");
    });
    w.start();
    const auto a = q.add("p");
    ASSERT_TRUE(reaches(q, a.id, job_state::completed));
    w.stop();
    EXPECT_TRUE(refused.load());
    EXPECT_TRUE(small.load());
    EXPECT_EQ(q.get(a.id)->progress, "small");
    ASSERT_TRUE(eventually([&] { return progress_events.load() >= 1; }, 5s));
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(progress_events.load(), 1);  // only the small one was announced
}

TEST_F(Jobs, BadOptionsAreTypedErrorsAndAddNothing) {
    job_queue q(pool_, "bad");
    EXPECT_THROW(q.add("x", {.priority = 10}), invalid_argument);
    EXPECT_THROW(q.add("x", {.priority = -1}), invalid_argument);
    EXPECT_THROW(q.add("x", {.max_attempts = 0}), invalid_argument);
    EXPECT_THROW(q.add("x", {.delay = -1ms}), invalid_argument);
    EXPECT_THROW(q.add("x", {.id = "a\nb"}), invalid_argument);
    job_options bad_backoff;
    bad_backoff.backoff.jitter = 2;
    std::vector<std::pair<std::string, job_options>> batch{{"ok", {}}, {"bad", bad_backoff}};
    EXPECT_THROW(q.add_batch(batch), invalid_argument);
    EXPECT_EQ(q.counts().waiting, 0U);
    EXPECT_THROW(job_queue(pool_, ""), invalid_argument);
    EXPECT_THROW(job_worker(q, nullptr), invalid_argument);
    EXPECT_THROW(job_worker(q, [](job_context&) { return std::string(); }, {.threads = 0}),
                 invalid_argument);
    EXPECT_FALSE(q.get("unknown"));
}

TEST_F(Jobs, EventsReachASlotExactlyOnceEach) {
    job_queue q(pool_, "events");
    signal_hub hub(pool_);
    job_events events(q, hub);
    std::mutex mu;
    std::map<std::string, int> seen;  // "<kind> <id> <data>" -> count
    auto conn = events.on([&](const job_event& e) {
        static const char* names[] = {"completed", "failed", "stalled", "progress"};
        std::lock_guard lk(mu);
        ++seen[std::string(names[static_cast<int>(e.kind)]) + " " + e.id + " " + e.data];
    });
    job_options once;
    once.backoff = backoff_policy::fixed(0ms);
    // c is claimed by a worker that vanishes: the real worker reclaims it (stalled).
    const auto c = q.add("c", once);
    (void)detail::job_claim_script().run(
        pool_, {"redcoord:jobs:{events}"},
        {"ghost", "100", "t", "0.5", "redcoord:jobs:{events}:wake", "0", "0", "1000"});
    const auto a = q.add("a", once);
    const auto b = q.add("b", once);
    job_worker w(q,
                 [&](job_context& j) -> std::string {
                     if (j.payload() == "a") EXPECT_TRUE(j.report_progress("half"));
                     if (j.payload() == "b" && j.attempt() == 1) throw std::runtime_error("boom");
                     return "ok";
                 },
                 {.poll_timeout = 50ms});
    w.start();
    ASSERT_TRUE(eventually([&] { return q.counts().completed == 3; }, 5s));
    w.stop();
    const std::map<std::string, int> want{
        {"progress " + a.id + " half", 1}, {"completed " + a.id + " ", 1},
        {"failed " + b.id + " boom", 1},   {"completed " + b.id + " ", 1},
        {"stalled " + c.id + " ", 1},      {"completed " + c.id + " ", 1}};
    ASSERT_TRUE(eventually(
        [&] {
            std::lock_guard lk(mu);
            return seen.size() >= want.size();
        },
        5s));
    std::this_thread::sleep_for(100ms);  // a duplicate would arrive by now
    std::lock_guard lk(mu);
    EXPECT_EQ(seen, want);
}

TEST_F(Jobs, AConcurrencyLimitHoldsAcrossWorkers) {
    job_queue q(pool_, "concurrency", {.concurrency = 2});
    std::atomic<int> running{0}, peak{0};
    auto handler = [&](job_context&) {
        const int now = ++running;
        int p = peak.load();
        while (now > p && !peak.compare_exchange_weak(p, now)) {}
        std::this_thread::sleep_for(20ms);
        --running;
        return std::string();
    };
    job_worker w1(q, handler, {.threads = 3});
    job_worker w2(q, handler, {.threads = 3});
    w1.start();
    w2.start();
    for (int i = 0; i < 12; ++i) (void)q.add(std::to_string(i));
    ASSERT_TRUE(eventually([&] { return q.counts().completed == 12; }, 10s));
    w1.stop();
    w2.stop();
    EXPECT_LE(peak.load(), 2);
    EXPECT_EQ(peak.load(), 2);  // and the limit is used, not undercut
}

TEST_F(Jobs, ARateLimitSpreadsStartsOverWindows) {
    job_queue q(pool_, "rate", {.rate_limit = 5, .rate_interval = 300ms});
    std::mutex mu;
    std::vector<steady::time_point> starts;
    job_worker w(q,
                 [&](job_context&) {
                     std::lock_guard lk(mu);
                     starts.push_back(steady::now());
                     return std::string();
                 },
                 {.threads = 4});
    w.start();
    for (int i = 0; i < 15; ++i) (void)q.add(std::to_string(i));
    ASSERT_TRUE(eventually([&] { return q.counts().completed == 15; }, 10s));
    w.stop();
    std::lock_guard lk(mu);
    ASSERT_EQ(starts.size(), 15U);
    // Three windows at least: the 11th start cannot come before two windows passed.
    EXPECT_GE(starts[10] - starts[0], 590ms);
}

namespace {

// The tick times of the repeat `name` whose jobs exist (any state), ascending.
std::vector<std::int64_t> ticks_of(connection_pool& pool, const std::string& queue,
                                   const std::string& name) {
    const std::string base = "redcoord:jobs:{" + queue + "}";
    std::vector<std::int64_t> out;
    for (const char* set : {"waiting", "delayed", "active", "completed", "failed", "dead"}) {
        const auto r = pool.command({"ZRANGE", base + ":" + set, "0", "-1"});
        for (const auto& m : r.elements()) {
            // Active members are "<claim token>:<id>".
            const auto id = std::string_view(set) == "active"
                                ? m.text().substr(m.text().find(':') + 1)
                                : m.text();
            const std::string head = "repeat:" + name + ":";
            if (id.rfind(head, 0) == 0) out.push_back(std::stoll(id.substr(head.size())));
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

bool consecutive(const std::vector<std::int64_t>& ticks, std::int64_t step) {
    for (std::size_t i = 1; i < ticks.size(); ++i)
        if (ticks[i] - ticks[i - 1] != step) return false;
    return true;
}

}  // namespace

TEST_F(Jobs, RepeatTicksAreAddedOnceEachByOneSchedulerAcrossAHandOver) {
    job_queue q(pool_, "repeat");
    repeat_options r;
    r.every = 100ms;
    q.repeat("beat", "tick", r);
    job_worker w(q, [](job_context& j) { return j.id(); });
    w.start();
    job_scheduler s1(q, {.identity = "s1", .term = 1000ms});
    job_scheduler s2(q, {.identity = "s2", .term = 1000ms});
    s1.start();
    ASSERT_TRUE(eventually([&] { return s1.is_leader(); }, 5s));
    s2.start();
    ASSERT_TRUE(eventually([&] { return s1.ticks_added() >= 5; }, 5s));
    EXPECT_FALSE(s2.is_leader());
    s1.stop();  // resigns: s2 takes over and catches up what passed meanwhile
    ASSERT_TRUE(eventually([&] { return s2.is_leader() && s2.ticks_added() >= 5; }, 5s));
    s2.stop();
    w.stop();
    const auto ticks = ticks_of(pool_, "repeat", "beat");
    ASSERT_GE(ticks.size(), 10U);
    EXPECT_TRUE(consecutive(ticks, 100)) << "a tick was skipped";
    EXPECT_EQ(s1.ticks_added() + s2.ticks_added(), ticks.size()) << "a tick was added twice";
    EXPECT_EQ(ticks.front() % 100, 0);
}

TEST_F(Jobs, MissedTicksAreSkippedOrCaughtUpByPolicy) {
    job_queue q(pool_, "missed");
    repeat_options skip;
    skip.every = 100ms;
    skip.missed = repeat_options::missed_ticks::skip;
    q.repeat("skip", "s", skip);
    repeat_options catch_up = skip;
    catch_up.missed = repeat_options::missed_ticks::catch_up;
    q.repeat("catch", "c", catch_up);
    std::this_thread::sleep_for(650ms);              // no scheduler: six or seven ticks pass
    job_scheduler s(q, {.check_interval = 1000ms});  // one pass, then a long pause
    s.start();
    ASSERT_TRUE(eventually([&] { return s.ticks_added() > 0; }, 5s));
    std::this_thread::sleep_for(100ms);
    s.stop();
    EXPECT_EQ(ticks_of(pool_, "missed", "skip").size(), 1U);
    const auto caught = ticks_of(pool_, "missed", "catch");
    EXPECT_GE(caught.size(), 6U);
    EXPECT_TRUE(consecutive(caught, 100));
}

TEST_F(Jobs, ATickUnderAStaleEpochIsFencedOff) {
    job_queue q(pool_, "fenced");
    repeat_options r;
    r.every = 50ms;
    q.repeat("r", "x", r);
    job_scheduler s(q, {.identity = "leader"});
    s.start();
    ASSERT_TRUE(eventually([&] { return s.is_leader() && s.ticks_added() > 0; }, 5s));
    // A paused ex-leader's late write: same identity, an older epoch.
    try {
        (void)detail::job_tick_script().run(
            pool_, {"redcoord:jobs:{fenced}", "redcoord:election:{fenced}"},
            {"leader", "1", "r", "redcoord:jobs:{fenced}:wake", "99999999999999"});
        FAIL() << "a stale epoch was accepted";
    } catch (const reply_error& e) {
        EXPECT_NE(std::string(e.what()).find("FENCED"), std::string::npos) << e.what();
    }
    s.stop();
    for (auto t : ticks_of(pool_, "fenced", "r")) EXPECT_NE(t, 99999999999999);
}

TEST_F(Jobs, BadRepeatsAreTypedErrors) {
    job_queue q(pool_, "badrepeat");
    repeat_options both;
    both.every = 1s;
    both.cron = "* * * * *";
    EXPECT_THROW(q.repeat("r", "x", both), invalid_argument);
    EXPECT_THROW(q.repeat("r", "x", repeat_options{}), invalid_argument);
    repeat_options cron;
    cron.cron = "61 * * * *";
    EXPECT_THROW(q.repeat("r", "x", cron), invalid_argument);
    cron.cron = "0 9 * * mon-fri";
    cron.time_zone = "Mars/Olympus_Mons";
    EXPECT_THROW(q.repeat("r", "x", cron), invalid_argument);
    cron.time_zone = "Europe/Berlin";
    EXPECT_NO_THROW(q.repeat("r", "x", cron));
    repeat_options with_id;
    with_id.every = 1s;
    with_id.job.id = "fixed";
    EXPECT_THROW(q.repeat("r2", "x", with_id), invalid_argument);
    EXPECT_TRUE(q.remove_repeat("r"));
    EXPECT_FALSE(q.remove_repeat("r"));
}

// Pause and resume: a paused queue hands out nothing (a job added meanwhile waits), a job
// already running finishes, and resume() wakes the idle workers at once (they do not wait for
// their poll timeout). Shared by every client: a second queue object sees the pause.
TEST_F(Jobs, PausedQueueClaimsNothingUntilResumed) {
    job_queue q(pool_, "pausing");
    std::atomic<bool> release_first{false};
    std::atomic<int> runs{0};
    job_worker w(q,
                 [&](job_context& j) {
                     ++runs;
                     if (j.payload() == "first")
                         while (!release_first) std::this_thread::sleep_for(5ms);
                     return std::string("ok");
                 },
                 {.poll_timeout = 10s});
    w.start();
    const auto first = q.add("first");
    ASSERT_TRUE(reaches(q, first.id, job_state::active));
    EXPECT_TRUE(q.pause());
    EXPECT_FALSE(q.pause()) << "pausing a paused queue changes nothing";
    job_queue other(pool_, "pausing");
    EXPECT_TRUE(other.paused());
    EXPECT_TRUE(inspect_jobs(pool_, "pausing").paused);
    const auto second = q.add("second");
    release_first = true;  // the running job finishes while paused
    ASSERT_TRUE(reaches(q, first.id, job_state::completed));
    std::this_thread::sleep_for(500ms);
    EXPECT_EQ(state_of(q, second.id), job_state::waiting) << "a paused queue handed out a job";
    EXPECT_EQ(runs.load(), 1);
    const auto resumed_at = std::chrono::steady_clock::now();
    EXPECT_TRUE(other.resume());
    EXPECT_FALSE(q.resume()) << "resuming a running queue changes nothing";
    ASSERT_TRUE(reaches(q, second.id, job_state::completed));
    // Woken by resume(), not by the 10 s poll.
    EXPECT_LT(std::chrono::steady_clock::now() - resumed_at, 5s);
    EXPECT_FALSE(q.paused());
    w.stop();
}

// request_stop() and running(), as queue_worker has them: the request returns at once, the
// running job finishes and is completed, nothing new is claimed, and stop() then joins.
TEST_F(Jobs, RequestStopReturnsAtOnceAndTheRunningJobFinishes) {
    job_queue q(pool_, "requeststop");
    std::atomic<bool> release{false}, started{false};
    job_worker w(q,
                 [&](job_context&) {
                     started = true;
                     while (!release) std::this_thread::sleep_for(5ms);
                     return std::string("done");
                 },
                 {.poll_timeout = 50ms});
    EXPECT_FALSE(w.running());
    w.request_stop();  // not running: nothing to stop, and start() still starts
    w.start();
    EXPECT_TRUE(w.running());
    const auto first = q.add("first");
    // Its handler runs (active on the server is not enough: a claimed job that has not
    // started when the stop comes goes back to waiting, by design).
    ASSERT_TRUE(redcoord::testing::eventually([&] { return started.load(); }));
    const auto asked = std::chrono::steady_clock::now();
    w.request_stop();
    EXPECT_LT(std::chrono::steady_clock::now() - asked, 1s) << "request_stop() waited";
    EXPECT_TRUE(w.running());
    const auto second = q.add("second");
    release = true;
    ASSERT_TRUE(reaches(q, first.id, job_state::completed));
    std::this_thread::sleep_for(200ms);
    EXPECT_EQ(state_of(q, second.id), job_state::waiting) << "claimed after request_stop()";
    w.stop();
    EXPECT_FALSE(w.running());
    EXPECT_EQ(w.stats().completed, 1u);
}

TEST_F(Jobs, TheContextTellsTheTimeoutsEndAndTheLeasesBound) {
    job_queue q(pool_, "bounds");
    const auto timed = q.add("t", {.timeout = 20s}).id;
    const auto free = q.add("f").id;
    std::mutex mu;
    std::map<std::string,
             std::pair<std::optional<steady::time_point>, std::optional<steady::time_point>>>
        seen;
    job_worker_options o;
    o.lease = 3s;
    const auto before = steady::now();
    job_worker w(
        q,
        [&](job_context& c) {
            std::lock_guard lk(mu);
            seen[c.id()] = {c.deadline(), c.held_until()};
            return std::string();
        },
        o);
    w.start();
    ASSERT_TRUE(eventually([&] { return q.counts().completed == 2; }));
    w.stop();
    const auto after = steady::now();
    std::lock_guard lk(mu);
    const auto& [deadline, held] = seen.at(timed);
    ASSERT_TRUE(deadline.has_value());
    EXPECT_GE(*deadline, before + 20s);
    EXPECT_LE(*deadline, after + 20s);
    ASSERT_TRUE(held.has_value());
    EXPECT_GE(*held, before + 2900ms);  // less the drift allowance
    EXPECT_LE(*held, after + 3s);
    EXPECT_FALSE(seen.at(free).first.has_value());
    EXPECT_TRUE(seen.at(free).second.has_value());
}
