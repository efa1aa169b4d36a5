// Issue 35, item 6: a job worker's heartbeats and its leases' local bounds follow its runtime's
// clock, so a test advances the clock instead of sleeping through a lease of a minute (without
// the clock seam the waits below would fail).

#include <redcoord/core/pool.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/jobs/job_queue.hpp>
#include <redcoord/jobs/job_worker.hpp>
#include <redcoord/testing/runtime_server.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::runtime_server;

namespace {

bool soon(const std::function<bool()>& p) { return redcoord::testing::eventually(p, 5s); }

// A handler that runs until `release` is set or its stop token fires, and shows what its
// context says while it runs.
struct held_job {
    std::atomic<bool> running{false}, release{false}, stopped{false};
    std::mutex mu;
    std::optional<std::chrono::steady_clock::time_point> held_until;  // guarded by mu

    std::string operator()(job_context& c) {
        running = true;
        while (!release) {
            {
                std::lock_guard l(mu);
                held_until = c.held_until();
            }
            if (c.stop_token().stop_requested()) {
                stopped = true;
                throw std::runtime_error("stopped");
            }
            std::this_thread::sleep_for(2ms);
        }
        return "done";
    }
    // Lets a running handler return when a test ends early (a failed assertion), so the
    // worker's stop() does not wait for it for ever.
    struct on_exit_release {
        held_job& j;
        ~on_exit_release() { j.release = true; }
    };
    std::optional<std::chrono::steady_clock::time_point> until() {
        std::lock_guard l(mu);
        return held_until;
    }
};

}  // namespace

TEST(JobsClock, AHeartbeatRenewsTheLeaseWhenDueByTheClock) {
    runtime_server s;
    auto& [srv, rt, pool] = s;
    job_queue q(pool, "clock-beat");
    held_job job;
    job_worker w(q, [&](job_context& c) { return job(c); }, {.lease = 60s});
    const held_job::on_exit_release guard{job};
    w.start();
    const auto a = q.add("long");
    ASSERT_TRUE(soon([&] { return job.running.load() && job.until().has_value(); }));
    const auto first = *job.until();
    // A third of the lease by the clock: the heartbeat renews it, and the bound moves on by
    // what the clock moved.
    rt->clock().advance(20s + 1ms);
    ASSERT_TRUE(soon([&] {
        const auto u = job.until();
        return u && *u >= first + 19s;
    })) << "the lease's bound did not move";
    EXPECT_FALSE(job.stopped.load());
    job.release = true;
    ASSERT_TRUE(soon([&] { return q.get(a.id)->state == job_state::completed; }));
    w.stop();
}

TEST(JobsClock, AWorkerCutOffFromItsServerStopsTheJobAtTheLeaseBoundByTheClock) {
    runtime_server s(200ms);  // the heartbeats against the stopped server
    auto& [srv, rt, pool] = s;
    job_queue q(pool, "clock-cut");
    held_job job;
    job_worker w(q, [&](job_context& c) { return job(c); }, {.lease = 60s});
    const held_job::on_exit_release guard{job};
    w.start();
    (void)q.add("long");
    ASSERT_TRUE(soon([&] { return job.running.load(); }));
    srv.pause();
    // Past the lease by the clock with no heartbeat confirmed: the handler is told to stop, a
    // minute before the server would let another worker take the job.
    for (int i = 0; i < 3; ++i) {
        rt->clock().advance(20s + 1ms);
        std::this_thread::sleep_for(50ms);
    }
    EXPECT_TRUE(soon([&] { return job.stopped.load(); }));
    srv.resume();
    job.release = true;
    w.stop();
}
