// Real faults against jobs: worker processes (half of them claiming in batches) SIGKILLed at
// random while 20,000 jobs with random delays, priorities, deadlines and 10% failing first
// attempts run; scheduler processes whose leader is SIGKILLed again and again while a
// repeatable job ticks.

#include "jobs_chaos.hpp"

#include <redcoord/core/token.hpp>
#include <redcoord/jobs/job_queue.hpp>
#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

#include <thread>

using namespace redcoord;
using namespace std::chrono_literals;
using namespace jobs_chaos;
using redcoord::testing::local_server;

namespace {
constexpr int jobs = 20000;
constexpr int workers = 4;
constexpr int max_kills = 30;
}  // namespace

TEST(JobsFault, SigkilledWorkersLoseNoJobAndRunNoneAfterItsDeadline) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    job_queue q(pool, "work");
    const auto p = add_jobs(q, jobs);
    const setting at{srv.url(), srv.url(), "work", srv.dir()};

    std::vector<slot> slots(workers);
    std::vector<int> generation(workers, 0);
    for (std::size_t i = 0; i < workers; ++i)
        spawn_worker(slots[i], i, at, "w" + std::to_string(i) + "g0");
    std::set<std::string> killed;
    const auto until = std::chrono::steady_clock::now() + 120s;
    while (std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(random_between(100, 500)));
        const auto n = q.counts();
        if (n.waiting + n.delayed + n.active == 0) break;
        if (static_cast<int>(killed.size()) < max_kills && n.completed < jobs * 9 / 10) {
            const auto i = static_cast<std::size_t>(random_between(0, workers - 1));
            slots[i].proc->kill();  // SIGKILL: claiming, running, completing or failing
            killed.insert(slots[i].id);
            spawn_worker(slots[i], i, at,
                         "w" + std::to_string(i) + "g" + std::to_string(++generation[i]));
        }
    }
    stop_all(slots, at);

    const auto n = q.counts();
    EXPECT_EQ(n.waiting + n.delayed + n.active, 0U);
    EXPECT_EQ(n.dead, 0U);
    ASSERT_EQ(n.completed + n.failed, static_cast<std::uint64_t>(jobs)) << "jobs lost";
    for (const auto& id : q.list(job_state::failed, 0)) {
        EXPECT_TRUE(p.with_deadline.count(id)) << id << " failed without a deadline";
        EXPECT_NE(q.get(id)->error.find("deadline"), std::string::npos) << id;
    }
    const int completed_in_time = check_deadlines(pool, "work", p.with_deadline);
    const auto starts = read_starts(pool);
    const auto r = check_reruns(starts, killed, {});
    EXPECT_GE(r.retried, jobs / 10 - static_cast<int>(n.failed))
        << "failing first attempts were not retried";
    const auto inversions = priority_inversions(starts, p.ready_at, killed);
    EXPECT_EQ(inversions, 0) << "jobs started while a higher-priority job stood ready";
    std::printf(
        "[ report   ] %d jobs (%zu with deadlines, %llu failed past them, %d completed before), "
        "%zu workers SIGKILLed, %d runs repeated because of kills, %d back-off retries checked, "
        "0 lost, %d priority inversions\n",
        jobs, p.with_deadline.size(), static_cast<unsigned long long>(n.failed), completed_in_time,
        killed.size(), r.by_kills, r.retried, inversions);
    EXPECT_GE(killed.size(), 10U) << "the test did not exercise enough kills";
}

TEST(JobsFault, ASigkilledSchedulerLeaderNeitherSkipsNorDoublesATick) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    job_queue q(pool, "ticks");
    repeat_options r;
    r.every = 100ms;
    r.missed = repeat_options::missed_ticks::catch_up;
    q.repeat("beat", "b", r);
    const setting at{srv.url(), srv.url(), "ticks", srv.dir()};
    std::vector<slot> slots(3);
    int generation = 0;
    auto start = [&](slot& s) {
        spawn_scheduler(s, at, "sched" + std::to_string(generation++), 1000);
    };
    for (auto& s : slots) start(s);
    int kills = 0;
    const auto until = std::chrono::steady_clock::now() + 9s;
    while (std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(1500ms);
        const auto holder = pool.command({"HGET", "redcoord:election:{ticks}", "holder"});
        if (!holder.is_string()) continue;
        for (auto& s : slots)
            if (s.id == holder.text()) {
                s.proc->kill();  // the leader, between or inside its passes
                ++kills;
                start(s);
            }
    }
    std::this_thread::sleep_for(2500ms);  // the last successor's term starts and it catches up
    stop_all(slots, at);
    std::vector<std::int64_t> ticks;
    for (const auto& id : q.list(job_state::waiting, 0))
        if (id.rfind("repeat:beat:", 0) == 0) ticks.push_back(std::stoll(id.substr(12)));
    std::sort(ticks.begin(), ticks.end());
    ASSERT_GE(ticks.size(), 80U);
    for (std::size_t i = 1; i < ticks.size(); ++i)
        ASSERT_EQ(ticks[i] - ticks[i - 1], 100) << "a tick was skipped after " << ticks[i - 1];
    EXPECT_GE(kills, 4);
    std::printf(
        "[ report   ] %zu ticks, consecutive, each added once, across %d SIGKILLed "
        "scheduler leaders\n",
        ticks.size(), kills);
}
