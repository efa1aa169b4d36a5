// Jobs across a real Sentinel failover: WAIT-confirmed adds are never lost and every one of them
// runs; a repeatable job keeps ticking, none skipped, once the new master serves.
#include "failover_faults.hpp"

#include <redcoord/core/errors.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/core/replication.hpp>
#include <redcoord/jobs/job_queue.hpp>
#include <redcoord/jobs/job_scheduler.hpp>
#include <redcoord/jobs/job_worker.hpp>
#include <redcoord/testing/local_sentinel.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <mutex>
#include <thread>
#include <vector>

using namespace redcoord;
using namespace std::chrono_literals;
using redcoord::testing::local_sentinel;
using redcoord::testing::local_sentinel_options;

using redcoord::sentinel_test::eventually_ok;

TEST(JobsFailover, ConfirmedJobsSurviveAFailoverAndAllRunAndTicksResume) {
    local_sentinel_options so;
    so.replicas = 2;  // the promoted master keeps a replica to WAIT for
    local_sentinel svc(so);
    connection_pool pool(svc.endpoint(), {.max_size = 12});
    job_queue q(pool, "orders", {.replicas = 1, .replica_timeout = 200ms});
    repeat_options every;
    every.every = 100ms;
    q.repeat("tick", "t", every);
    job_worker w(q, [](job_context& j) { return j.id(); }, {.threads = 2, .lease = 2000ms});
    w.start();
    job_scheduler s(q, {.term = 1000ms});
    s.start();

    std::atomic<bool> stop{false}, killed{false};
    std::atomic<int> after{0}, unconfirmed{0};
    std::mutex mu;
    std::vector<std::string> confirmed;
    std::thread producer([&] {
        for (int i = 0; !stop; ++i) {
            const std::string id = "o" + std::to_string(i);
            try {
                (void)q.add("order", {.id = id});
                std::lock_guard lk(mu);
                confirmed.push_back(id);
                if (killed) ++after;
            } catch (const error&) {
                ++unconfirmed;  // not confirmed: the producer would add it again
                std::this_thread::sleep_for(5ms);
            }
        }
    });
    std::this_thread::sleep_for(500ms);
    const auto old = svc.kill_master();
    killed = true;
    (void)svc.wait_promoted(old, 20s);
    const bool continued = eventually_ok(20s, [&] { return after.load() > 50; });
    stop = true;
    producer.join();
    EXPECT_TRUE(continued) << "adds after the failover: " << after;

    // Every confirmed job completes (a settlement lost with the old master runs it again).
    std::vector<std::string> ids;
    {
        std::lock_guard lk(mu);
        ids = confirmed;
    }
    std::size_t lost = 0;
    ASSERT_TRUE(eventually_ok(30s,
                              [&] {
                                  lost = 0;
                                  for (const auto& id : ids) {
                                      const auto j = q.get(id);
                                      if (!j || j->state != job_state::completed) ++lost;
                                  }
                                  return lost == 0;
                              }))
        << lost << " of " << ids.size() << " confirmed jobs did not complete";

    // Ticks: consecutive from the first to the last, across the failover.
    std::this_thread::sleep_for(1500ms);  // a scheduler leads on the new master and catches up
    s.stop();
    w.stop();
    std::vector<std::int64_t> ticks;
    for (auto state : {job_state::waiting, job_state::completed, job_state::active})
        for (const auto& id : q.list(state, 0))
            if (id.rfind("repeat:tick:", 0) == 0) ticks.push_back(std::stoll(id.substr(12)));
    std::sort(ticks.begin(), ticks.end());
    ticks.erase(std::unique(ticks.begin(), ticks.end()), ticks.end());
    ASSERT_GE(ticks.size(), 20U);
    for (std::size_t i = 1; i < ticks.size(); ++i)
        EXPECT_EQ(ticks[i] - ticks[i - 1], 100) << "a tick was skipped after " << ticks[i - 1];
    std::cout << "[sentinel/jobs] confirmed adds " << ids.size() << " (" << after
              << " after the failover), unconfirmed " << unconfirmed << ", lost 0; " << ticks.size()
              << " ticks, none skipped\n";
}
