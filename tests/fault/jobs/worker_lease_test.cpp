// A job_worker cut off from its server (the server SIGSTOPped) past a job's lease: the job's
// stop token fires by the lease's end, from the worker's local bound (review 2026-11-28, F7),
// and the result the handler returns after that is refused once another worker has taken
// the job back.

#include <redcoord/core/pool.hpp>
#include <redcoord/jobs/job_queue.hpp>
#include <redcoord/jobs/job_worker.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>

using namespace redcoord;
using namespace std::chrono_literals;
using redcoord::testing::eventually;
using redcoord::testing::local_server;
using steady = std::chrono::steady_clock;

namespace {

// What the cut-off worker's handler saw, and the gate that holds it until the test lets go.
struct first_run {
    std::mutex mu;
    std::condition_variable_any cv;
    std::optional<steady::time_point> started, stopped;
    bool release = false;

    void let_go() {
        {
            std::lock_guard lk(mu);
            release = true;
        }
        cv.notify_all();
    }
};

}  // namespace

TEST(JobWorker, F7_StopTokenFiresWhenTheLeaseIsGoneWhileCutOff) {
    constexpr auto lease = 1500ms;
    // Late by at most this much: the timer's tick, the handler's wake-up, a loaded machine.
    constexpr auto slack = 250ms;
    local_server srv;
    connection_pool pool(srv.endpoint());
    job_queue q(pool, "cutoff");
    first_run run;
    job_worker cut_off(q,
                       [&](job_context& j) -> std::string {
                           std::unique_lock lk(run.mu);
                           run.started = steady::now();
                           // Waits for the stop token (or the test's end), as a long job should.
                           (void)run.cv.wait_for(lk, j.stop_token(), 60s,
                                                 [&] { return run.release; });
                           if (j.stop_token().stop_requested()) run.stopped = steady::now();
                           run.cv.wait(lk, [&] { return run.release; });
                           return "first run";
                       },
                       {.lease = lease});
    // Declared after the worker, so it runs first on the way out, also after a failed
    // assertion: the handler returns, and the server answers the worker's stop().
    struct cleanup {
        first_run& run;
        local_server& srv;
        ~cleanup() {
            srv.resume();
            run.let_go();
        }
    } guard{run, srv};
    cut_off.start();
    job_options o;
    o.backoff = backoff_policy::fixed(0ms);
    const auto a = q.add("long", o);
    ASSERT_TRUE(eventually(
        [&] {
            std::lock_guard lk(run.mu);
            return run.started.has_value();
        },
        5s));
    srv.pause();
    steady::time_point started;
    {
        std::lock_guard lk(run.mu);
        started = *run.started;
    }
    // The claim was sent before the handler started, so its lease ends on the server before
    // started + lease; wait well past that.
    const bool fired = eventually(
        [&] {
            std::lock_guard lk(run.mu);
            return run.stopped.has_value();
        },
        std::chrono::duration_cast<std::chrono::milliseconds>(started + lease + 2s -
                                                              steady::now()));
    srv.resume();
    ASSERT_TRUE(fired) << "the stop token did not fire while the worker was cut off, "
                       << "2 s past the job's lease";
    const auto after = *run.stopped - started;
    EXPECT_LE(after, lease + slack)
        << "fired " << std::chrono::duration_cast<std::chrono::milliseconds>(after).count()
        << " ms after the handler started, lease 1500 ms";
    EXPECT_GE(after, lease / 2) << "fired before the lease could have lapsed";
    std::printf("[ report   ] stop token fired %lld ms after the handler started (lease %lld ms)\n",
                static_cast<long long>(
                    std::chrono::duration_cast<std::chrono::milliseconds>(after).count()),
                static_cast<long long>(lease.count()));

    // The server is back: another worker takes the lapsed job back and runs it, and the
    // cut-off worker's result, returned after its token fired, is not recorded.
    job_worker other(q, [](job_context&) { return std::string("second run"); },
                     {.lease = lease, .poll_timeout = 50ms});
    other.start();
    ASSERT_TRUE(eventually([&] { return q.get(a.id)->state == job_state::completed; }, 10s));
    EXPECT_EQ(q.get(a.id)->result, "second run");
    EXPECT_EQ(q.get(a.id)->attempts, 2U);
    run.let_go();
    ASSERT_TRUE(eventually([&] { return cut_off.stats().lost == 1; }, 10s))
        << "the cut-off worker's late result was not refused";
    EXPECT_EQ(cut_off.stats().completed, 0U);
    EXPECT_EQ(q.get(a.id)->result, "second run");
    other.stop();
    cut_off.stop();
}
