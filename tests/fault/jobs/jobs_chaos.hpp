#pragma once
// The jobs fault tests' harness and history checks, shared by tests/fault/jobs (one server) and
// tests/fault/sentinel (a failover): worker and scheduler processes (jobs_fault_child) started
// and SIGKILLed, 20,000 jobs of random delays, priorities, deadlines and failing first
// attempts, the workers' start log (kept on a server of its own, so that no failover loses
// it), and the checks of that log: every repeated run explained, back-offs kept, no job
// started while one of higher priority stood ready, none after its deadline.

#include <redcoord/core/pool.hpp>
#include <redcoord/core/token.hpp>
#include <redcoord/jobs/job_queue.hpp>
#include <redcoord/testing/process.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace jobs_chaos {

using namespace std::chrono_literals;

inline constexpr int threads_per_worker = 2;
inline constexpr int lease_ms = 1500;
inline constexpr int work_us = 1500;
inline constexpr int backoff_ms = 50;

inline std::int64_t wall_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// Where the children run: the queue's server (a redis:// or redis-sentinel:// URL), the log
// server, the queue's name, and a directory for their output.
struct setting {
    std::string url, log_url, queue;
    std::filesystem::path dir;
};

struct slot {
    std::string id;
    std::unique_ptr<redcoord::testing::process> proc;
};

inline void spawn(slot& s, const setting& at, std::vector<std::string> args) {
    redcoord::testing::process_options po;
    po.output_file = (at.dir / (s.id + ".log")).string();
    args.insert(args.begin(), CHILD_PATH);
    s.proc = std::make_unique<redcoord::testing::process>(args, po);
}

// Workers with an odd slot number claim in batches (job_worker_options::prefetch): their kills
// also drop claimed jobs that never started and settlements not yet sent.
inline void spawn_worker(slot& s, std::size_t number, const setting& at, const std::string& id) {
    s.id = id;
    spawn(s, at,
          {"worker", at.url, at.log_url, at.queue, id, std::to_string(threads_per_worker),
           std::to_string(lease_ms), std::to_string(work_us), number % 2 == 1 ? "8" : "1"});
}

inline void spawn_scheduler(slot& s, const setting& at, const std::string& id, int term_ms,
                            int replicas = 0) {
    s.id = id;
    spawn(s, at,
          {"scheduler", at.url, at.queue, id, std::to_string(term_ms), std::to_string(replicas)});
}

// SIGTERM, then each must exit 0 (or 3, a worker that lost a job it held, when `lost_allowed`:
// a failover loses settlements).
inline void stop_all(std::vector<slot>& slots, const setting& at, bool lost_allowed = false) {
    for (auto& s : slots) s.proc->signal(SIGTERM);
    for (auto& s : slots) {
        const auto rc = s.proc->wait_for(15s);
        const bool ok = rc == 0 || (lost_allowed && rc == 3);
        EXPECT_TRUE(ok) << s.id << " exited " << (rc ? *rc : -1)
                        << " (3: a live worker lost a job it held; -1: still running)";
        if (!ok) {
            std::ifstream f(at.dir / (s.id + ".log"));
            std::cout << f.rdbuf();
        }
    }
}

// The jobs added: those with a deadline, and each one's priority and ready time (wall ms).
struct plan {
    std::set<std::string> with_deadline;
    std::map<std::string, std::pair<int, std::int64_t>> ready_at;
};

// Adds `n` jobs "j<i>" in batches of 500: priorities 0..9, a quarter delayed by up to 2 s, one
// in 50 with a deadline 0.3..12 s after it is due, 10 attempts with a fixed back-off.
inline plan add_jobs(redcoord::job_queue& q, int n) {
    plan p;
    for (int base = 0; base < n; base += 500) {
        std::vector<std::pair<std::string, redcoord::job_options>> batch;
        for (int i = base; i < std::min(n, base + 500); ++i) {
            redcoord::job_options o;
            o.id = "j" + std::to_string(i);
            o.priority = static_cast<int>(redcoord::random_between(0, 9));
            if (i % 4 == 0) o.delay = std::chrono::milliseconds(redcoord::random_between(0, 2000));
            if (i % 50 == 7) {
                // Some pass before the backlog reaches them, some after.
                o.deadline =
                    o.delay + std::chrono::milliseconds(redcoord::random_between(300, 12000));
                p.with_deadline.insert(o.id);
            }
            o.max_attempts = 10;
            o.backoff = redcoord::backoff_policy::fixed(std::chrono::milliseconds(backoff_ms));
            batch.emplace_back(o.id, o);
        }
        (void)q.add_batch(batch);
        const auto added = wall_ms();  // the server's add time (same clock) came before
        for (const auto& [id, o] : batch) p.ready_at[id] = {o.priority, added + o.delay.count()};
    }
    return p;
}

// Per job, its logged starts: (worker, attempt, wall ms), in order.
using start_log = std::map<std::string, std::vector<std::tuple<std::string, int, std::int64_t>>>;

inline start_log read_starts(redcoord::connection_pool& log) {
    start_log starts;
    const auto r = log.command({"LRANGE", "log", "0", "-1"});
    for (const auto& e : r.elements()) {
        const auto& t = e.text();
        const auto a = t.find('|'), b = t.find('|', a + 1), c = t.find('|', b + 1);
        starts[t.substr(0, a)].emplace_back(t.substr(a + 1, b - a - 1),
                                            std::stoi(t.substr(b + 1, c - b - 1)),
                                            std::stoll(t.substr(c + 1)));
    }
    return starts;
}

// Every start but a job's last is a failing first attempt (then the retry waited its back-off),
// `excused` (who, wall ms: a failover's roll-back, say), or a killed worker's.
struct reruns {
    int by_kills = 0, retried = 0, excused = 0;
};

inline reruns check_reruns(const start_log& starts, const std::set<std::string>& killed,
                           const std::function<bool(const std::string&, std::int64_t)>& excused) {
    reruns r;
    for (const auto& [job, list] : starts) {
        for (std::size_t k = 0; k + 1 < list.size(); ++k) {
            const auto& [who, attempt, at] = list[k];
            // add_jobs()' jobs "j<i>" whose payload ends in 0 (not a repeat's ticks).
            const bool planned = attempt == 1 && job.front() == 'j' && job.back() == '0';
            if (planned) {
                // The retry waited its back-off after the failure (or the stall, when the
                // worker died first), which came after the start.
                ++r.retried;
                EXPECT_GE(std::get<2>(list[k + 1]) - at, backoff_ms) << job;
            } else if (excused && excused(who, at)) {
                ++r.excused;
            } else if (killed.count(who)) {
                ++r.by_kills;
            } else {
                // Both runs' wall times, so that a failure can be placed against the faults.
                ADD_FAILURE() << job << " ran again although " << who
                              << " (never killed) ran it, at " << at << " ms; again by "
                              << std::get<0>(list[k + 1]) << " at " << std::get<2>(list[k + 1])
                              << " ms";
            }
        }
    }
    return r;
}

// Starts that came while a job of higher priority stood ready ("highest priority first among
// ready jobs"). A job's ready spells are known only where no kill interfered: from its due time
// to its first start when that start is attempt 1, and from its failed first attempt plus the
// back-off to a second start that is attempt 2 by a worker never killed (a kill between them
// makes the retry wait for the lease instead). A start is logged a little after its claim (at
// most `lag`), so a spell counts from its beginning + `lag` + 50 ms (the claims' housekeeping
// and the clocks) to its end - `lag`; a start inside a higher-priority spell is an inversion.
// Spells that overlap `unknown` (wall ms, from and to) are not counted: across a failover the
// server's state rolls back a little (a failure lost leaves its job active until its lease
// lapses, a claim lost makes a job ready again), so when a job stood ready there is not known.
inline int priority_inversions(const start_log& starts,
                               const std::map<std::string, std::pair<int, std::int64_t>>& ready_at,
                               const std::set<std::string>& killed,
                               std::pair<std::int64_t, std::int64_t> unknown = {0, -1}) {
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
    struct held_spell {
        std::string job;
        int priority;
        std::int64_t from, to;
    };
    std::vector<held_spell> spells;  // to name the job an inversion passed over
    auto spell = [&](const std::string& job, int p, std::int64_t from, std::int64_t to) {
        if (from <= unknown.second && unknown.first <= to) return;
        from = std::max(from + lag + 50, t0);
        to = std::min(to - lag, t1);
        if (from > to) return;
        spells.push_back({job, p, from, to});
        ++covered[static_cast<std::size_t>(p)][static_cast<std::size_t>(from - t0)];
        --covered[static_cast<std::size_t>(p)][static_cast<std::size_t>(to - t0 + 1)];
    };
    for (const auto& [job, list] : starts) {
        const auto known = ready_at.find(job);
        if (known == ready_at.end()) continue;  // a repeat's tick
        const auto [p, ready] = known->second;
        if (std::get<1>(list[0]) != 1) continue;
        spell(job, p, ready, std::get<2>(list[0]));
        if (list.size() > 1 && std::get<1>(list[1]) == 2 && job.back() == '0' &&
            !killed.count(std::get<0>(list[0])))
            spell(job, p, std::get<2>(list[0]) + work_us / 1000 + backoff_ms, std::get<2>(list[1]));
    }
    for (auto& level : covered)
        for (std::size_t t = 1; t < level.size(); ++t) level[t] += level[t - 1];
    int inversions = 0;
    for (const auto& [job, list] : starts) {
        const auto known = ready_at.find(job);
        if (known == ready_at.end()) continue;
        const int p = known->second.first;
        for (const auto& s : list) {
            const auto t = static_cast<std::size_t>(std::get<2>(s) - t0);
            for (int higher = p + 1; higher < 10; ++higher)
                if (covered[static_cast<std::size_t>(higher)][t] > 0) {
                    if (++inversions <= 5) {
                        std::string over;
                        const auto at = std::get<2>(s);
                        for (const auto& h : spells)
                            if (h.priority == higher && h.from <= at && at <= h.to) {
                                over = h.job;
                                break;
                            }
                        const auto& o = starts.at(over);
                        ADD_FAILURE()
                            << job << " (priority " << p << ") started at " << t << " ms ("
                            << std::get<0>(s) << ", attempt " << std::get<1>(s) << ") while "
                            << over << " (priority " << higher << ", ready at "
                            << ready_at.at(over).second - t0 << " ms) stood ready; " << over
                            << " started first at " << std::get<2>(o[0]) - t0 << " ms ("
                            << std::get<0>(o[0]) << ", attempt " << std::get<1>(o[0]) << ")";
                    }
                    break;
                }
        }
    }
    return inversions;
}

// None of the jobs with a deadline started after it (the server's times, kept in the job);
// returns how many of them completed.
inline int check_deadlines(redcoord::connection_pool& pool, const std::string& queue,
                           const std::set<std::string>& with_deadline) {
    int completed = 0;
    for (const auto& id : with_deadline) {
        const auto f = pool.command(
            {"HMGET", "redcoord:jobs:{" + queue + "}:job:" + id, "state", "started", "deadline"});
        if (!f.elements().at(0).is_string() || f.elements().at(0).text() != "completed") continue;
        ++completed;
        EXPECT_LE(std::stoll(f.elements().at(1).text()), std::stoll(f.elements().at(2).text()))
            << id << " started after its deadline";
    }
    return completed;
}

}  // namespace jobs_chaos
