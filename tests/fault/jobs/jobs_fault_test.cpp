// Real faults against jobs: worker processes (half of them claiming in batches) SIGKILLed at
// random while 20,000 jobs with random delays, priorities, deadlines and 10% failing first
// attempts run; scheduler processes whose leader is SIGKILLed again and again while a
// repeatable job ticks.

#include <redcoord/core/token.hpp>
#include <redcoord/jobs/job_queue.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/process.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <thread>

using namespace redcoord;
using namespace std::chrono_literals;
using redcoord::testing::local_server;
using redcoord::testing::process;

namespace {

constexpr int jobs = 20000;
constexpr int workers = 4;
constexpr int threads_per_worker = 2;
constexpr int lease_ms = 1500;
constexpr int work_us = 1500;
constexpr int max_kills = 30;
constexpr int backoff_ms = 50;

struct slot {
    std::string id;
    std::unique_ptr<process> proc;
};

void spawn(slot& s, const local_server& srv, std::vector<std::string> args) {
    redcoord::testing::process_options po;
    po.output_file = (srv.dir() / (s.id + ".log")).string();
    args.insert(args.begin(), CHILD_PATH);
    s.proc = std::make_unique<process>(args, po);
}

// Workers with an odd slot number claim in batches (job_worker_options::prefetch): their
// kills also drop claimed jobs that never started and settlements not yet sent.
void spawn_worker(slot& s, std::size_t number, const local_server& srv, const std::string& id) {
    s.id = id;
    spawn(s, srv,
          {"worker", srv.url(), "work", id, std::to_string(threads_per_worker),
           std::to_string(lease_ms), std::to_string(work_us), number % 2 == 1 ? "8" : "1"});
}

void stop_all(std::vector<slot>& slots, const local_server& srv) {
    for (auto& s : slots) s.proc->signal(SIGTERM);
    for (auto& s : slots) {
        const auto rc = s.proc->wait_for(15s);
        EXPECT_EQ(rc, 0) << s.id << " (3: a live worker lost a job it held)";
        if (rc != 0) {
            std::ifstream f(srv.dir() / (s.id + ".log"));
            std::cout << f.rdbuf();
        }
    }
}

std::int64_t wall_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// Per job, its logged starts: (worker, attempt, wall ms), in order.
using start_log = std::map<std::string, std::vector<std::tuple<std::string, int, std::int64_t>>>;

// Starts that came while a job of higher priority stood ready ("highest priority first among
// ready jobs"). A job's ready spells are known only where no kill interfered: from its due time
// to its first start when that start is attempt 1, and from its failed first attempt plus the
// back-off to a second start that is attempt 2 by a worker never killed (a kill between them
// makes the retry wait for the lease instead). A start is logged a little after its claim (at
// most `lag`), so a spell counts from its beginning + `lag` + 50 ms (the claims' housekeeping and
// the clocks) to its end - `lag`; a start inside a higher-priority spell is an inversion.
int priority_inversions(const start_log& starts,
                        const std::map<std::string, std::pair<int, std::int64_t>>& ready_at,
                        const std::set<std::string>& killed) {
    constexpr std::int64_t lag = 200;
    std::int64_t t0 = std::numeric_limits<std::int64_t>::max(), t1 = 0;
    for (const auto& [job, list] : starts)
        for (const auto& s : list) {
            t0 = std::min(t0, std::get<2>(s));
            t1 = std::max(t1, std::get<2>(s));
        }
    if (starts.empty()) return 0;
    // covered[p][t - t0]: how many spells of priority p hold at ms t (as differences, then
    // summed).
    std::vector<std::vector<int>> covered(10,
                                          std::vector<int>(static_cast<std::size_t>(t1 - t0 + 2)));
    auto spell = [&](int p, std::int64_t from, std::int64_t to) {
        from = std::max(from + lag + 50, t0);
        to = std::min(to - lag, t1);
        if (from > to) return;
        ++covered[static_cast<std::size_t>(p)][static_cast<std::size_t>(from - t0)];
        --covered[static_cast<std::size_t>(p)][static_cast<std::size_t>(to - t0 + 1)];
    };
    for (const auto& [job, list] : starts) {
        const auto [p, ready] = ready_at.at(job);
        if (std::get<1>(list[0]) != 1) continue;
        spell(p, ready, std::get<2>(list[0]));
        if (list.size() > 1 && std::get<1>(list[1]) == 2 && job.back() == '0' &&
            !killed.count(std::get<0>(list[0])))
            spell(p, std::get<2>(list[0]) + work_us / 1000 + backoff_ms, std::get<2>(list[1]));
    }
    for (auto& level : covered)
        for (std::size_t t = 1; t < level.size(); ++t) level[t] += level[t - 1];
    int inversions = 0;
    for (const auto& [job, list] : starts) {
        const int p = ready_at.at(job).first;
        for (const auto& s : list) {
            const auto t = static_cast<std::size_t>(std::get<2>(s) - t0);
            for (int higher = p + 1; higher < 10; ++higher)
                if (covered[static_cast<std::size_t>(higher)][t] > 0) {
                    if (++inversions <= 5)
                        ADD_FAILURE() << job << " (priority " << p << ") started at " << t
                                      << " ms while a job of priority " << higher << " stood ready";
                    break;
                }
        }
    }
    return inversions;
}

}  // namespace

TEST(JobsFault, SigkilledWorkersLoseNoJobAndRunNoneAfterItsDeadline) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    job_queue q(pool, "work");
    std::set<std::string> with_deadline;
    std::map<std::string, std::pair<int, std::int64_t>> ready_at;  // id -> priority, wall ms
    for (int base = 0; base < jobs; base += 500) {
        std::vector<std::pair<std::string, job_options>> batch;
        for (int i = base; i < base + 500; ++i) {
            job_options o;
            o.id = "j" + std::to_string(i);
            o.priority = static_cast<int>(random_between(0, 9));
            if (i % 4 == 0) o.delay = std::chrono::milliseconds(random_between(0, 2000));
            if (i % 50 == 7) {
                // Some pass before the backlog reaches them, some after.
                o.deadline = o.delay + std::chrono::milliseconds(random_between(300, 12000));
                with_deadline.insert(o.id);
            }
            o.max_attempts = 10;
            o.backoff = backoff_policy::fixed(std::chrono::milliseconds(backoff_ms));
            batch.emplace_back(o.id, o);
        }
        (void)q.add_batch(batch);
        const auto added = wall_ms();  // the server's add time (same clock) came before
        for (const auto& [id, o] : batch) ready_at[id] = {o.priority, added + o.delay.count()};
    }

    std::vector<slot> slots(workers);
    std::vector<int> generation(workers, 0);
    for (int i = 0; i < workers; ++i)
        spawn_worker(slots[static_cast<std::size_t>(i)], static_cast<std::size_t>(i), srv,
                     "w" + std::to_string(i) + "g0");
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
            spawn_worker(slots[i], i, srv,
                         "w" + std::to_string(i) + "g" + std::to_string(++generation[i]));
        }
    }
    stop_all(slots, srv);

    const auto n = q.counts();
    EXPECT_EQ(n.waiting + n.delayed + n.active, 0U);
    EXPECT_EQ(n.dead, 0U);
    ASSERT_EQ(n.completed + n.failed, static_cast<std::uint64_t>(jobs)) << "jobs lost";
    for (const auto& id : q.list(job_state::failed, 0)) {
        EXPECT_TRUE(with_deadline.count(id)) << id << " failed without a deadline";
        EXPECT_NE(q.get(id)->error.find("deadline"), std::string::npos) << id;
    }
    // None started after its deadline (the server's times, kept in the job).
    int completed_in_time = 0;
    for (const auto& id : with_deadline) {
        const auto f = pool.command(
            {"HMGET", "redcoord:jobs:{work}:job:" + id, "state", "started", "deadline"});
        if (f.elements().at(0).text() != "completed") continue;
        ++completed_in_time;
        EXPECT_LE(std::stoll(f.elements().at(1).text()), std::stoll(f.elements().at(2).text()))
            << id << " started after its deadline";
    }

    // Every start but a job's last is a failing first attempt or a killed worker's.
    start_log starts;
    const auto log = pool.command({"LRANGE", "log", "0", "-1"});
    for (const auto& e : log.elements()) {
        const auto& t = e.text();
        const auto a = t.find('|'), b = t.find('|', a + 1), c = t.find('|', b + 1);
        starts[t.substr(0, a)].emplace_back(t.substr(a + 1, b - a - 1),
                                            std::stoi(t.substr(b + 1, c - b - 1)),
                                            std::stoll(t.substr(c + 1)));
    }
    int by_kills = 0, retried = 0;
    for (const auto& [job, list] : starts) {
        for (std::size_t k = 0; k + 1 < list.size(); ++k) {
            const auto& [who, attempt, at] = list[k];
            const bool planned = attempt == 1 && job.back() == '0';
            if (!planned) {
                ++by_kills;
                EXPECT_TRUE(killed.count(who))
                    << job << " ran again although " << who << " (never killed) ran it";
            } else {
                // The retry waited its back-off after the failure (or the stall, when the
                // worker died first), which came after the start.
                ++retried;
                EXPECT_GE(std::get<2>(list[k + 1]) - at, backoff_ms) << job;
            }
        }
    }
    EXPECT_GE(retried, jobs / 10 - static_cast<int>(n.failed))
        << "failing first attempts were not retried";
    const auto inversions = priority_inversions(starts, ready_at, killed);
    EXPECT_EQ(inversions, 0) << "jobs started while a higher-priority job stood ready";
    std::printf(
        "[ report   ] %d jobs (%zu with deadlines, %llu failed past them, %d completed "
        "before), %zu workers "
        "SIGKILLed, %d runs repeated because of kills, %d back-off retries checked, 0 "
        "lost, %d priority inversions\n",
        jobs, with_deadline.size(), static_cast<unsigned long long>(n.failed), completed_in_time,
        killed.size(), by_kills, retried, inversions);
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
    std::vector<slot> slots(3);
    int generation = 0;
    auto start = [&](slot& s) {
        s.id = "sched" + std::to_string(generation++);
        spawn(s, srv, {"scheduler", srv.url(), "ticks", s.id, "1000"});
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
    stop_all(slots, srv);
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
