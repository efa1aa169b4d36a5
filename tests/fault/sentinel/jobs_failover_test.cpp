// Jobs across a real Sentinel failover: WAIT-confirmed adds are never lost and every one of them
// runs; a repeatable job keeps ticking, none skipped, once the new master serves. Then all the
// faults at once: 20,000 jobs, SIGKILLed workers and scheduler leaders, and the master SIGKILLed.
#include "failover_faults.hpp"
#include "jobs_chaos.hpp"

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
#include <optional>
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
    job_queue q(pool, "orders", {.replication = {.replicas = 1, .timeout = 200ms}});
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

// The whole fault set at once: 20,000 WAIT-confirmed jobs (random delays, priorities,
// deadlines, 10% failing first attempts) run by worker processes SIGKILLed at random (half of
// them prefetching), ticks added by scheduler processes whose leader is SIGKILLed again and
// again, and the master SIGKILLed once, its replicas 300 ms behind (Sentinel promotes one). No
// confirmed job is lost,
// none starts after its deadline, no tick is skipped or added twice, retries keep their
// back-off, no job starts while one of higher priority stands ready; a job runs again only
// after a kill of its worker, or across a failover (a settlement the new master never got):
// the planned one, or one Sentinel makes on its own when the promoted master is slow to answer
// on a loaded machine. (A CI run had 5,600 jobs first run 2-5 s after the planned promotion
// run again 0.2-2.4 s later, by workers never killed: a later rollback would explain it, so
// the report now counts the failovers after the planned one.)
TEST(JobsFailover, TwentyThousandJobsUnderWorkerAndLeaderKillsAndAFailover) {
    using namespace jobs_chaos;
    constexpr int jobs = 20000;
    constexpr std::size_t workers = 4;
    constexpr int max_kills = 20;
    local_sentinel_options so;
    so.replicas = 2;
    // One planned failover: a promoted master busy with 20,000 jobs on a loaded machine must
    // not look down to the sentinels after half a second (unplanned ones are excused below).
    so.down_after = 1500ms;
    local_sentinel svc(so);
    redcoord::testing::local_server log_srv;
    connection_pool pool(svc.endpoint(), {.max_size = 12});
    connection_pool log(log_srv.endpoint());
    job_queue q(pool, "work", {.replication = {.replicas = 1, .timeout = 2s}});
    const auto p = add_jobs(q, jobs);
    repeat_options every;
    every.every = 100ms;
    every.missed = repeat_options::missed_ticks::catch_up;
    q.repeat("tick", "t", every);
    const setting at{svc.url(), log_srv.url(), "work", log_srv.dir()};

    std::vector<slot> slots(workers), schedulers(3);
    std::vector<int> generation(workers, 0);
    int scheduler_generation = 0;
    for (std::size_t i = 0; i < workers; ++i)
        spawn_worker(slots[i], i, at, "w" + std::to_string(i) + "g0");
    auto start_scheduler = [&](slot& s) {
        spawn_scheduler(s, at, "sched" + std::to_string(scheduler_generation++), 1000, 1);
    };
    for (auto& s : schedulers) start_scheduler(s);

    std::set<std::string> killed;
    int leader_kills = 0;
    std::int64_t killed_at = 0, promoted_at = 0;  // the master's, wall ms
    // Failovers Sentinel made on its own after the planned one (a master that did not answer
    // within down-after on a loaded machine), each seen as a change of the master the
    // sentinels name, in wall ms: each rolls back what its replica had not received yet.
    // (The killed master's address is not one: sentinels that have not switched yet still
    // name it for a while.)
    std::vector<std::int64_t> unplanned;
    std::optional<redcoord::host_port> master_now, killed_master;
    const auto watch_master = [&] {
        if (!master_now) return;
        try {
            const auto m = svc.master_address();
            if (m == *master_now || m == *killed_master) return;
            master_now = m;
            unplanned.push_back(wall_ms());
        } catch (const error&) {
            // No sentinel answered: looked at again next time.
        }
    };
    const auto t0 = std::chrono::steady_clock::now();
    auto last_leader_kill = t0;
    while (std::chrono::steady_clock::now() < t0 + 150s) {
        std::this_thread::sleep_for(std::chrono::milliseconds(random_between(100, 400)));
        if (promoted_at == 0 && std::chrono::steady_clock::now() > t0 + 2s) {
            // The replicas are cut off for 300 ms first (stopped, their links closed by the
            // master), so the promoted one misses the claims and settlements of that time:
            // the failover rolls the queue's state back, as asynchronous replication may.
            std::vector<redcoord::testing::local_server*> paused;
            auto& master = svc.master();
            for (const auto& srv : svc.servers())
                if (srv.get() != &master) {
                    srv->pause();
                    paused.push_back(srv.get());
                }
            (void)master.command({"CLIENT", "KILL", "TYPE", "replica"});
            killed_at = wall_ms();
            std::this_thread::sleep_for(300ms);
            const auto old = svc.kill_master();
            killed_master = old;
            for (auto* srv : paused) srv->resume();
            master_now = svc.wait_promoted(old, 20s);
            promoted_at = wall_ms();
        }
        watch_master();
        try {
            const auto n = q.counts();
            if (promoted_at != 0 && n.waiting + n.delayed + n.active == 0) break;
            if (static_cast<int>(killed.size()) < max_kills && n.completed < jobs * 9 / 10) {
                const auto i = static_cast<std::size_t>(random_between(0, workers - 1));
                slots[i].proc->kill();
                killed.insert(slots[i].id);
                spawn_worker(slots[i], i, at,
                             "w" + std::to_string(i) + "g" + std::to_string(++generation[i]));
            }
            if (std::chrono::steady_clock::now() - last_leader_kill > 1500ms) {
                const auto holder = pool.command({"HGET", "redcoord:election:{work}", "holder"});
                for (auto& s : schedulers)
                    if (holder.is_string() && s.id == holder.text()) {
                        s.proc->kill();
                        ++leader_kills;
                        last_leader_kill = std::chrono::steady_clock::now();
                        start_scheduler(s);
                    }
            }
        } catch (const error&) {
            // The failover in progress: the next look goes to the new master.
        }
    }
    ASSERT_NE(promoted_at, 0);
    // The schedulers stop first; the workers then run the last ticks.
    stop_all(schedulers, at);
    ASSERT_TRUE(eventually_ok(30s, [&] {
        watch_master();
        const auto n = q.counts();
        return n.waiting + n.delayed + n.active == 0;
    })) << "jobs left unfinished";
    stop_all(slots, at, true);

    std::set<std::string> completed, failed;
    for (const auto& id : q.list(job_state::completed, 0)) completed.insert(id);
    for (const auto& id : q.list(job_state::failed, 0)) failed.insert(id);
    EXPECT_EQ(q.counts().dead, 0U);
    int lost = 0;
    for (const auto& [id, unused] : p.ready_at)
        if (!completed.count(id) && !failed.count(id)) ++lost;
    EXPECT_EQ(lost, 0) << "confirmed jobs lost";
    for (const auto& id : failed) {
        EXPECT_TRUE(p.with_deadline.count(id)) << id << " failed without a deadline";
        EXPECT_NE(q.get(id)->error.find("deadline"), std::string::npos) << id;
    }
    const int completed_in_time = check_deadlines(pool, "work", p.with_deadline);

    // Ticks: consecutive from the first to the last, each once.
    std::vector<std::int64_t> ticks;
    for (const auto& id : completed)
        if (id.rfind("repeat:tick:", 0) == 0) ticks.push_back(std::stoll(id.substr(12)));
    std::sort(ticks.begin(), ticks.end());
    ASSERT_GE(ticks.size(), 20U);
    for (std::size_t i = 1; i < ticks.size(); ++i)
        EXPECT_EQ(ticks[i] - ticks[i - 1], 100) << "a tick was skipped after " << ticks[i - 1];

    const auto starts = read_starts(log);
    std::printf(
        "[ faults   ] replicas cut off at %lld ms, a replica promoted at %lld ms (wall), "
        "%zu failovers after it\n",
        static_cast<long long>(killed_at), static_cast<long long>(promoted_at), unplanned.size());
    // A rollback reaches back at most to the last failover, plus a batch claimed before it
    // and started after.
    const std::int64_t last_failover = unplanned.empty() ? promoted_at : unplanned.back();
    // A run repeated without a kill of its worker came before the new master served (its
    // settlement, or its claim, went with the old master), or soon after: a worker's batch
    // claimed before the failover and settled after it.
    const auto r = check_reruns(starts, killed, [&](const std::string&, std::int64_t at_ms) {
        return at_ms <= last_failover + 1000;
    });
    int ticks_run_twice = 0;
    for (const auto& [job, list] : starts)
        if (job.rfind("repeat:", 0) == 0 && list.size() > 1) ++ticks_run_twice;
    // Priority order: everywhere but around the failover (from a second before the replicas
    // stopped, to a second after the promotion).
    const auto inversions =
        priority_inversions(starts, p.ready_at, killed, {killed_at - 1000, last_failover + 1000});
    EXPECT_EQ(inversions, 0) << "jobs started while a higher-priority job stood ready";
    std::printf(
        "[ report   ] %d confirmed jobs, 0 lost (%zu failed past their deadlines, %d with one "
        "completed in time), %zu workers and %d scheduler leaders SIGKILLed, the master "
        "SIGKILLed once, its replicas cut off 300 ms before; runs repeated: %d after kills, %d "
        "across the failover, %d back-off "
        "retries checked; %zu ticks, consecutive (%d ran twice); %d priority inversions\n",
        jobs, failed.size(), completed_in_time, killed.size(), leader_kills, r.by_kills, r.excused,
        r.retried, ticks.size(), ticks_run_twice, inversions);
    EXPECT_GE(killed.size(), 5U) << "the test did not exercise enough kills";
}
