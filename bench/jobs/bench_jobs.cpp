// Job benchmarks (issue 21), against one local redis-server:
//   jobs_{1,4}w_per_s: add + run + complete of no-op jobs through 1 and 4 worker processes (this
//     binary started again with --worker), against the same run's reliable_queue push + pop +
//     ack with as many consumer processes (--consumer): ratio jobs_{1,4}w_vs_reliable_queue
//     (goal 0.8); the same with job_worker_options::prefetch = 16: jobs_{1,4}w_prefetch_per_s,
//     ratio jobs_{1,4}w_prefetch_vs_reliable_queue;
//   delayed_job_lateness_p99_ms: from a delayed job's due time to its handler's start;
//   cron_tick_lateness_p99_ms: from a repeat's tick to its job's start (every 100 ms);
//   cron_duplicate_ticks, cron_missed_ticks: over a leader hand-over between two schedulers;
//   jobs_{1,4}w_server_cpu_per_job, reliable_queue_{1,4}w_server_cpu_per_message: the server's
//     CPU time (user + system) per item in those runs, in microseconds;
//   jobs_1p4t_per_s, ratio jobs_1p4t_vs_reliable_queue, jobs_1p4t_redis_us_per_job: one worker
//     process of 4 threads with job_worker defaults (which batch claims and settlements with
//     several threads), against the 4 consumer processes' reliable queue of the same round;
//   jobs_redis_us_per_job: the time Redis spent running the jobs scripts (INFO commandstats,
//     `usec` of EVAL and EVALSHA, which includes the commands the scripts call) per job (add,
//     claim, settle, heartbeats) in the runs with job_worker defaults, 1 and 4 workers (the
//     median of the runs), in microseconds: what the scripts cost, without the polls and the
//     event loop that the CPU figures include.
// Throughput pairs run interleaved, three rounds; each ratio is the median of the rounds'.

#include "common.hpp"

#include <redcoord/core/token.hpp>
#include <redcoord/jobs/job_queue.hpp>
#include <redcoord/jobs/job_scheduler.hpp>
#include <redcoord/jobs/job_worker.hpp>
#include <redcoord/queue/reliable_queue.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/process.hpp>
#include <redcoord/testing/wait.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

redcoord::testing::local_server* server = nullptr;
constexpr int jobs_per_run = 10000;
constexpr int rounds = 3;
constexpr int prefetch_jobs = 16;  // job_worker_options::prefetch of the *_prefetch lines
std::map<std::string, std::vector<double>> rates;       // "jobs/1" -> per round
std::map<std::string, std::vector<double>> server_cpu;  // "jobs/1" -> server CPU us per item

// The server's CPU time so far (user + system), in seconds, from INFO cpu.
double server_cpu_seconds() {
    const auto info = server->command({"INFO", "cpu"}).text();
    double total = 0;
    for (const char* field : {"used_cpu_sys:", "used_cpu_user:"}) {
        const auto at = info.find(field);
        if (at != std::string::npos) total += std::stod(info.substr(at + std::strlen(field)));
    }
    return total;
}

std::unique_ptr<redcoord::connection_pool> own_pool() {
    return std::make_unique<redcoord::connection_pool>(server->endpoint(),
                                                       redcoord::pool_options{.max_size = 3});
}

std::int64_t wall_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string self_path;  // this binary, for the worker and consumer processes

// Worker processes: `self --worker|--consumer URL NAME PREFETCH THREADS` until SIGTERM
// (PREFETCH 0: job_worker's default).
std::vector<std::unique_ptr<redcoord::testing::process>> start_children(const char* role,
                                                                        const std::string& name,
                                                                        int n, int prefetch = 0,
                                                                        int threads = 1) {
    std::vector<std::unique_ptr<redcoord::testing::process>> out;
    for (int i = 0; i < n; ++i)
        out.push_back(std::make_unique<redcoord::testing::process>(
            std::vector<std::string>{self_path, role, server->url(), name, std::to_string(prefetch),
                                     std::to_string(threads)}));
    return out;
}

void stop_children(std::vector<std::unique_ptr<redcoord::testing::process>>& children) {
    for (auto& c : children) c->signal(SIGTERM);
    for (auto& c : children) (void)c->wait_for(10s);
}

// Adds `n` no-op jobs in batches of 100 while `workers` worker processes of `threads` threads
// each run them; the rate from the first add until all completed.
double jobs_run(int workers, int n, int prefetch, int threads = 1) {
    const auto name = "bench-jobs-" + redcoord::random_token().substr(0, 8);
    auto producer_pool = own_pool();
    redcoord::job_queue producer(*producer_pool, name);
    auto children = start_children("--worker", name, workers, prefetch, threads);
    // The workers subscribe and claim once before the clock starts.
    (void)redcoord::testing::eventually(
        [&] {
            return producer_pool->command({"PUBSUB", "NUMSUB", "redcoord:jobs:{" + name + "}:wake"})
                       .elements()
                       .at(1)
                       .integer() >= workers;
        },
        10s);
    const auto t0 = clock_type::now();
    std::vector<std::pair<std::string, redcoord::job_options>> batch(100, {"job", {}});
    for (int added = 0; added < n; added += 100) (void)producer.add_batch(batch);
    while (producer.counts().completed < static_cast<std::uint64_t>(n))
        std::this_thread::sleep_for(1ms);
    const double secs = std::chrono::duration<double>(clock_type::now() - t0).count();
    stop_children(children);
    return n / secs;
}

// The same through reliable_queue: push_batch of 100 while `workers` consumer processes pop
// and ack (each counts its acks in a hash the producer reads).
double reliable_run(int workers, int n) {
    const auto name = "bench-rq-" + redcoord::random_token().substr(0, 8);
    auto producer_pool = own_pool();
    redcoord::reliable_queue producer(*producer_pool, name);
    auto children = start_children("--consumer", name, workers);
    (void)redcoord::testing::eventually(
        [&] {
            return producer_pool->command({"HLEN", name + ":ready"}).integer() >= workers;
        },
        10s);
    const auto t0 = clock_type::now();
    std::vector<std::string> batch(100, "job");
    for (int added = 0; added < n; added += 100) (void)producer.push_batch(batch);
    auto acked = [&] {
        std::int64_t total = 0;
        const auto r = producer_pool->command({"HVALS", name + ":acked"});
        for (const auto& v : r.elements()) total += std::stoll(v.text());
        return total;
    };
    while (acked() < n) std::this_thread::sleep_for(1ms);
    const double secs = std::chrono::duration<double>(clock_type::now() - t0).count();
    stop_children(children);
    return n / secs;
}

volatile std::sig_atomic_t child_stop = 0;
void on_term(int) { child_stop = 1; }

// The child side: a job_worker, or a reliable_queue consumer that reports its acks every 100.
int run_child(const std::string& role, const std::string& url, const std::string& name,
              int prefetch, int threads) {
    std::signal(SIGTERM, on_term);
    redcoord::connection_pool pool(redcoord::parse_endpoint(url),
                                   {.max_size = static_cast<std::size_t>(threads) + 2});
    if (role == "--worker") {
        redcoord::job_queue q(pool, name);
        redcoord::job_worker w(q, [](redcoord::job_context&) { return std::string(); },
                               {.threads = static_cast<std::size_t>(threads),
                                .prefetch = static_cast<std::size_t>(prefetch)});
        w.start();
        while (!child_stop) std::this_thread::sleep_for(10ms);
        w.stop();
        return 0;
    }
    redcoord::reliable_queue q(pool, name);
    const auto me = redcoord::random_token().substr(0, 8);
    (void)pool.command({"HSET", name + ":ready", me, "1"});
    std::int64_t acked = 0, reported = 0;
    while (!child_stop) {
        auto d = q.pop(10ms);
        if (d && q.ack(*d)) ++acked;
        if (acked - reported >= 100 || (!d && acked > reported)) {
            (void)pool.command({"HINCRBY", name + ":acked", me, std::to_string(acked - reported)});
            reported = acked;
        }
    }
    return 0;
}

// The time Redis spent in scripts so far (INFO commandstats: the `usec` of eval, evalsha and
// their _ro forms; a script's own calls are inside it), in microseconds.
double server_script_us() {
    const auto info = server->command({"INFO", "commandstats"}).text();
    double total = 0;
    for (std::size_t at = info.find("cmdstat_eval"); at != std::string::npos;
         at = info.find("cmdstat_eval", at + 1)) {
        const auto usec = info.find("usec=", at);
        if (usec != std::string::npos) total += std::stod(info.substr(usec + 5));
    }
    return total;
}
std::vector<double> redis_us_per_job;          // the runs with job_worker defaults
std::vector<double> threads_redis_us_per_job;  // the runs of one process of several threads

// kind: "reliable", "jobs" (job_worker defaults), "prefetch" (job_worker with prefetch) or
// "threads" (one process of `workers` threads, job_worker defaults).
void throughput(benchmark::State& state, const std::string& kind, int workers) {
    for (auto _ : state) {
        const auto t0 = clock_type::now();
        const double cpu0 = server_cpu_seconds();
        const double us0 = server_script_us();
        const double r = kind == "reliable"  ? reliable_run(workers, jobs_per_run)
                         : kind == "threads" ? jobs_run(1, jobs_per_run, 0, workers)
                                             : jobs_run(workers, jobs_per_run,
                                                        kind == "prefetch" ? prefetch_jobs : 0);
        state.SetIterationTime(std::chrono::duration<double>(clock_type::now() - t0).count());
        const auto key = kind + "/" + std::to_string(workers);
        rates[key].push_back(r);
        server_cpu[key].push_back((server_cpu_seconds() - cpu0) * 1e6 / jobs_per_run);
        if (kind == "jobs") redis_us_per_job.push_back((server_script_us() - us0) / jobs_per_run);
        if (kind == "threads")
            threads_redis_us_per_job.push_back((server_script_us() - us0) / jobs_per_run);
        state.counters["items_per_second"] = r;
    }
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

void delayed_lateness() {
    auto p = own_pool();
    redcoord::job_queue q(*p, "bench-delayed");
    std::mutex mu;
    std::map<std::string, std::int64_t> due;  // payload -> due wall ms
    std::vector<double> late;
    redcoord::job_worker w(q,
                           [&](redcoord::job_context& j) {
                               const auto now = wall_ms();
                               std::lock_guard lk(mu);
                               late.push_back(static_cast<double>(now - due.at(j.payload())));
                               return std::string();
                           },
                           {.threads = 2});
    w.start();
    constexpr int n = 300;
    for (int i = 0; i < n; ++i) {
        const auto delay = std::chrono::milliseconds(50 + (i * 37) % 450);
        const auto key = std::to_string(i);
        {
            std::lock_guard lk(mu);
            due[key] = wall_ms() + delay.count();
        }
        (void)q.add(key, {.delay = delay});
        std::this_thread::sleep_for(3ms);
    }
    (void)redcoord::testing::eventually([&] { return w.stats().completed >= n; }, 20s);
    w.stop();
    std::lock_guard lk(mu);
    redcoord::bench::print_value("delayed_job_lateness_p99_ms",
                                 redcoord::bench::percentile(late, 99), "ms");
    redcoord::bench::print_value("delayed_job_lateness_p50_ms",
                                 redcoord::bench::percentile(late, 50), "ms");
}

void cron_ticks() {
    auto p = own_pool();
    redcoord::job_queue q(*p, "bench-cron");
    redcoord::repeat_options r;
    r.every = 100ms;
    q.repeat("tick", "t", r);
    std::mutex mu;
    std::vector<double> late;
    std::set<std::int64_t> ticks;
    redcoord::job_worker w(q, [&](redcoord::job_context& j) {
        const auto now = wall_ms();
        const auto tick = std::stoll(j.id().substr(j.id().rfind(':') + 1));
        std::lock_guard lk(mu);
        late.push_back(static_cast<double>(now - tick));
        ticks.insert(tick);
        return std::string();
    });
    w.start();
    redcoord::job_scheduler a(q, {.identity = "a", .term = 1000ms});
    redcoord::job_scheduler b(q, {.identity = "b", .term = 1000ms});
    a.start();
    (void)redcoord::testing::eventually([&] { return a.is_leader(); }, 5s);
    b.start();
    std::this_thread::sleep_for(2s);
    a.stop();  // hand-over: b leads and catches up
    std::this_thread::sleep_for(2s);
    b.stop();
    std::this_thread::sleep_for(200ms);
    w.stop();
    std::lock_guard lk(mu);
    const auto added = a.ticks_added() + b.ticks_added();
    std::int64_t missed = 0;
    for (auto it = ticks.begin(); it != ticks.end() && std::next(it) != ticks.end(); ++it)
        missed += (*std::next(it) - *it) / 100 - 1;
    redcoord::bench::print_value("cron_tick_lateness_p99_ms", redcoord::bench::percentile(late, 99),
                                 "ms");
    redcoord::bench::print_value("cron_duplicate_ticks", static_cast<double>(added - ticks.size()),
                                 "ticks");
    redcoord::bench::print_value("cron_missed_ticks", static_cast<double>(missed), "ticks");
    redcoord::bench::print_value("cron_ticks", static_cast<double>(ticks.size()), "ticks");
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 6 && (std::string(argv[1]) == "--worker" || std::string(argv[1]) == "--consumer"))
        return run_child(argv[1], argv[2], argv[3], std::stoi(argv[4]), std::stoi(argv[5]));
    self_path = argv[0];
    redcoord::testing::local_server srv;
    server = &srv;
    for (int r = 0; r < rounds; ++r)
        for (int workers : {1, 4}) {
            const auto tag = "/w" + std::to_string(workers) + "/round:" + std::to_string(r);
            for (const char* kind : {"reliable", "jobs", "prefetch", "threads"}) {
                if (std::string(kind) == "threads" && workers == 1) continue;  // = "jobs"
                benchmark::RegisterBenchmark(
                    (std::string(kind) + tag).c_str(),
                    [workers, kind](benchmark::State& s) { throughput(s, kind, workers); })
                    ->Iterations(1)
                    ->UseManualTime();
            }
        }
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    for (int workers : {1, 4}) {
        const auto w = std::to_string(workers);
        const double jobs = median(rates["jobs/" + w]);
        const double prefetched = median(rates["prefetch/" + w]);
        const double rq = median(rates["reliable/" + w]);
        redcoord::bench::print_value("jobs_" + w + "w_per_s", jobs, "jobs/s");
        redcoord::bench::print_value("reliable_queue_" + w + "w_per_s", rq, "messages/s");
        redcoord::bench::print_ratio("jobs_" + w + "w_vs_reliable_queue", rq > 0 ? jobs / rq : 0);
        redcoord::bench::print_value("jobs_" + w + "w_prefetch_per_s", prefetched, "jobs/s");
        redcoord::bench::print_ratio("jobs_" + w + "w_prefetch_vs_reliable_queue",
                                     rq > 0 ? prefetched / rq : 0);
        // Where the time goes: the server's CPU per item (it includes the run's waits' polls).
        redcoord::bench::print_value("jobs_" + w + "w_server_cpu_per_job",
                                     median(server_cpu["jobs/" + w]), "us");
        redcoord::bench::print_value("jobs_" + w + "w_prefetch_server_cpu_per_job",
                                     median(server_cpu["prefetch/" + w]), "us");
        redcoord::bench::print_value("reliable_queue_" + w + "w_server_cpu_per_message",
                                     median(server_cpu["reliable/" + w]), "us");
    }
    redcoord::bench::print_value("jobs_redis_us_per_job", median(redis_us_per_job), "us");
    {
        const double threads = median(rates["threads/4"]), rq = median(rates["reliable/4"]);
        redcoord::bench::print_value("jobs_1p4t_per_s", threads, "jobs/s");
        redcoord::bench::print_ratio("jobs_1p4t_vs_reliable_queue", rq > 0 ? threads / rq : 0);
        redcoord::bench::print_value("jobs_1p4t_redis_us_per_job", median(threads_redis_us_per_job),
                                     "us");
    }
    if (std::getenv("REDCOORD_BENCH_STATS")) {
        const auto info = server->command({"INFO", "commandstats"}).text();
        std::fprintf(stderr, "%s\n", info.c_str());
    }
    delayed_lateness();
    cron_ticks();
    benchmark::Shutdown();
    return 0;
}
