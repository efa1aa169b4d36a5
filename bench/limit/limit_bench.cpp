// The limiters against plain-hiredis references running the same scripts, in one run
// (issue 36):
//   ratio rate_limiter_vs_raw                rate_limiter::try_acquire()/s vs raw EVALSHA of gcra.lua
//   ratio semaphore_acquire_release_vs_raw   semaphore try_acquire()+release() pairs/s vs raw EVALSHA
//                                            of semaphore_acquire.lua + semaphore_release.lua
//   value rate_limiter_error_pct             4 clients asking 10x the rate for 10 s: allowed requests
//                                            against burst + rate x t (server time), in percent
//   ratio semaphore_contended_min_share      8 processes looping acquire/release on 3 permits for
//                                            5 s: the smallest one's acquisitions over an even share
//   value semaphore_wait_p99_ms              p99 of the time from calling try_acquire_for() to holding
//   value rwlock_writer_wait_max_ms          6 readers holding shares back to back (each 5 ms) for 5 s
//                                            while a writer asks every 100 ms: its longest wait
//                                            (writer preference bounds it; without, readers starve it)
// The pairs interleave raw and ours in short blocks (bench::alternate), so both meet the same
// machine. The semaphore's contended run uses processes (this program started again as each
// contender), each with its own runtime and pub/sub link; the rw_lock's uses threads.
#include "common.hpp"

#include "limit_scripts.hpp"

#include <redcoord/core/token.hpp>
#include <redcoord/limit/rate_limiter.hpp>
#include <redcoord/limit/rw_lock.hpp>
#include <redcoord/limit/semaphore.hpp>
#include <redcoord/testing/local_server.hpp>

#include <benchmark/benchmark.h>
#include <hiredis/hiredis.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using redcoord::bench::side;

namespace {

redcoord::testing::local_server* server;
side raw_rate, ours_rate, raw_sem, ours_sem;

redisContext* raw_connect() {
    auto* c = redisConnect("127.0.0.1", server->port());
    if (c == nullptr || c->err != 0) std::abort();
    return c;
}

std::string load(redisContext* c, const redcoord::script& s) {
    auto* r = static_cast<redisReply*>(redisCommand(c, "SCRIPT LOAD %s", s.source().c_str()));
    std::string sha(r->str, r->len);
    freeReplyObject(r);
    return sha;
}

// EVALSHA with argv; returns the first element of an array reply (or the integer reply).
long long evalsha(redisContext* c, const std::vector<std::string>& argv) {
    std::vector<const char*> v;
    std::vector<size_t> l;
    for (const auto& a : argv) {
        v.push_back(a.data());
        l.push_back(a.size());
    }
    auto* r = static_cast<redisReply*>(
        redisCommandArgv(c, static_cast<int>(v.size()), v.data(), l.data()));
    long long out = -1;
    if (r != nullptr && r->type == REDIS_REPLY_ARRAY && r->elements > 0)
        out = r->element[0]->integer;
    else if (r != nullptr && r->type == REDIS_REPLY_INTEGER)
        out = r->integer;
    freeReplyObject(r);
    return out;
}

void rate_pair(benchmark::State& st) {
    auto* c = raw_connect();
    const auto sha = load(c, redcoord::detail::gcra_script());
    // Generous enough that both sides are always admitted (the admitted path writes).
    const std::vector<std::string> argv{"EVALSHA", sha,          "1", "bench:raw:rate",
                                        "0.001",   "1000000000", "1"};
    redcoord::connection_pool pool(server->endpoint());
    redcoord::rate_limiter ours(pool, "bench", {.rate = 1e9, .burst = 1000000000});
    redcoord::bench::alternate(
        st, [&] { (void)evalsha(c, argv); }, [&] { (void)ours.try_acquire(); }, raw_rate,
        ours_rate);
    redisFree(c);
}

void semaphore_pair(benchmark::State& st) {
    auto* c = raw_connect();
    const auto acq = load(c, redcoord::detail::semaphore_acquire_script());
    const auto rel = load(c, redcoord::detail::semaphore_release_script());
    const std::string key = "bench:raw:sem", fence = key + ":fence", waiting = key + ":waiting",
                      queue = key + ":queue";
    redcoord::connection_pool pool(server->endpoint());
    redcoord::semaphore sem(pool, "bench", {.permits = 3, .timing = {.ttl = 30s}});
    redcoord::bench::alternate(
        st,
        [&] {
            const auto token = redcoord::random_token();
            // The arguments semaphore::try_acquire() sends (no waiter id, no fifo).
            if (evalsha(c, {"EVALSHA", acq, "4", key, fence, waiting, queue, token, "1", "3",
                            "30000", "", "500", "500", "0"}) != 1)
                st.SkipWithError("raw semaphore not acquired");
            (void)evalsha(c, {"EVALSHA", rel, "2", key, waiting, token, "1"});
        },
        [&] {
            auto p = sem.try_acquire();
            if (!p)
                st.SkipWithError("semaphore not acquired");
            else
                (void)p->release();
        },
        raw_sem, ours_sem);
    redisFree(c);
}

BENCHMARK(rate_pair)->MinTime(3)->UseRealTime();
BENCHMARK(semaphore_pair)->MinTime(3)->UseRealTime();

std::int64_t server_us() {
    const auto r = server->command({"TIME"});
    return std::stoll(r.elements().at(0).text()) * 1'000'000 +
           std::stoll(r.elements().at(1).text());
}

// 4 clients, each asking at 2.5x the rate (10x together) for 10 s.
double rate_error_pct() {
    const double rate = 200;
    const std::uint64_t burst = 20;
    std::atomic<std::uint64_t> allowed{0};
    std::atomic<bool> stop{false};
    const auto t0 = server_us();
    std::vector<std::thread> ts;
    for (int i = 0; i < 4; ++i)
        ts.emplace_back([&] {
            redcoord::connection_pool pool(server->endpoint());
            redcoord::rate_limiter l(pool, "bench:error", {.rate = rate, .burst = burst});
            const auto step = std::chrono::microseconds(static_cast<long>(1e6 / (rate * 2.5)));
            auto next = std::chrono::steady_clock::now();
            while (!stop) {
                if (l.try_acquire().allowed) ++allowed;
                next += step;
                std::this_thread::sleep_until(next);
            }
        });
    std::this_thread::sleep_for(10s);
    stop = true;
    for (auto& t : ts) t.join();
    const auto t1 = server_us();
    const double bound = static_cast<double>(burst) + rate * static_cast<double>(t1 - t0) / 1e6;
    std::fprintf(stderr, "rate_limiter: allowed %llu, burst + rate x t = %.1f\n",
                 static_cast<unsigned long long>(allowed.load()), bound);
    return std::abs(static_cast<double>(allowed.load()) - bound) / bound * 100;
}

// One contending process (bench_limit --semaphore-contender PORT START_NS END_NS OUT): loops
// acquire / 1 ms section / release on 3 permits from START_NS to END_NS (steady clock, which is
// CLOCK_MONOTONIC and so the same in every process), then writes its acquisitions and each
// wait in milliseconds to OUT, one number a line.
int semaphore_contender(char** argv) {
    redcoord::endpoint e;
    e.port = static_cast<std::uint16_t>(std::stoul(argv[2]));
    const std::chrono::steady_clock::time_point start{
        std::chrono::nanoseconds(std::stoll(argv[3]))};
    const std::chrono::steady_clock::time_point end{std::chrono::nanoseconds(std::stoll(argv[4]))};
    redcoord::connection_pool pool(e);
    redcoord::semaphore sem(pool, "bench:contended", {.permits = 3, .timing = {.ttl = 10s}});
    std::vector<double> waits;
    std::this_thread::sleep_until(start);
    while (std::chrono::steady_clock::now() < end) {
        const auto t0 = std::chrono::steady_clock::now();
        auto p = sem.try_acquire_for(1, 5s);
        if (!p) continue;
        waits.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count());
        std::this_thread::sleep_for(1ms);  // the section
        (void)p->release();
    }
    std::FILE* out = std::fopen(argv[5], "w");
    if (out == nullptr) return 1;
    std::fprintf(out, "%zu\n", waits.size());
    for (double w : waits) std::fprintf(out, "%.3f\n", w);
    return std::fclose(out) == 0 ? 0 : 1;
}

// 8 processes on 3 permits for 5 s (this program run again as each contender: a process of
// its own, with its own runtime and pub/sub link): smallest share and p99 wait.
std::pair<double, double> semaphore_contended() {
    const int clients = 8;
    const auto ns = [](std::chrono::steady_clock::time_point t) {
        return std::to_string(
            std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
    };
    // The start leaves every process time to exec and connect.
    const auto start = std::chrono::steady_clock::now() + 1s;
    const auto end = start + 5s;
    const auto dir =
        std::filesystem::temp_directory_path() / ("bench_limit_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    std::vector<pid_t> kids;
    std::vector<std::string> outs;
    for (int i = 0; i < clients; ++i) {
        outs.push_back((dir / ("contender" + std::to_string(i))).string());
        const std::vector<std::string> args{"bench_limit",
                                            "--semaphore-contender",
                                            std::to_string(server->port()),
                                            ns(start),
                                            ns(end),
                                            outs.back()};
        std::vector<char*> argv;
        for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        const pid_t pid = ::fork();
        if (pid < 0) std::abort();
        if (pid == 0) {
            ::execv("/proc/self/exe", argv.data());
            ::_exit(127);
        }
        kids.push_back(pid);
    }
    for (auto pid : kids) {
        int status = 0;
        if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            std::abort();
    }
    std::vector<std::uint64_t> counts;
    std::vector<double> all;
    for (const auto& path : outs) {
        std::ifstream in(path);
        std::uint64_t n = 0;
        in >> n;
        counts.push_back(n);
        for (double w = 0; in >> w;) all.push_back(w);
    }
    std::filesystem::remove_all(dir);
    std::uint64_t total = 0;
    for (auto n : counts) total += n;
    const double even = static_cast<double>(total) / clients;
    const double least = static_cast<double>(*std::min_element(counts.begin(), counts.end()));
    std::fprintf(stderr,
                 "semaphore contended (8 processes): %llu acquisitions, least %.0f of even %.1f\n",
                 static_cast<unsigned long long>(total), least, even);
    return {even > 0 ? least / even : 0.0, redcoord::bench::percentile(all, 99)};
}

// 6 readers that overlap all the time and one writer asking every 100 ms, for 5 s: the
// writer's longest wait in milliseconds (-1 when it was ever refused within 10 s).
double rwlock_writer_wait_max() {
    std::atomic<bool> stop{false};
    std::vector<std::thread> ts;
    for (int i = 0; i < 6; ++i)
        ts.emplace_back([&] {
            redcoord::connection_pool pool(server->endpoint());
            redcoord::rw_lock rw(pool, "bench:rw", {.timing = {.ttl = 10s}});
            while (!stop) {
                std::shared_lock<redcoord::rw_lock> l(rw, 10s);
                if (l.owns_lock()) std::this_thread::sleep_for(5ms);
            }
        });
    double most = 0;
    int writes = 0;
    {
        redcoord::connection_pool pool(server->endpoint());
        redcoord::rw_lock rw(pool, "bench:rw", {.timing = {.ttl = 10s}});
        const auto end = std::chrono::steady_clock::now() + 5s;
        while (std::chrono::steady_clock::now() < end) {
            std::this_thread::sleep_for(100ms);
            const auto t0 = std::chrono::steady_clock::now();
            if (!rw.try_lock_for(10s)) {
                most = -1;
                break;
            }
            most = std::max(most, std::chrono::duration<double, std::milli>(
                                      std::chrono::steady_clock::now() - t0)
                                      .count());
            rw.unlock();
            ++writes;
        }
    }
    stop = true;
    for (auto& t : ts) t.join();
    std::fprintf(stderr, "rw_lock: %d writes among 6 readers\n", writes);
    return most;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 6 && std::string_view(argv[1]) == "--semaphore-contender")
        return semaphore_contender(argv);
    redcoord::testing::local_server s;
    server = &s;
    (void)redcoord::bench::run_benchmarks(argc, argv);
    auto ratio = [](const side& ours, const side& raw) {
        return raw.per_second() > 0 ? ours.per_second() / raw.per_second() : 0.0;
    };
    std::fprintf(stderr, "calls/s: rate raw %.0f ours %.0f; semaphore pairs raw %.0f ours %.0f\n",
                 raw_rate.per_second(), ours_rate.per_second(), raw_sem.per_second(),
                 ours_sem.per_second());
    using redcoord::bench::print_ratio;
    using redcoord::bench::print_value;
    print_ratio("rate_limiter_vs_raw", ratio(ours_rate, raw_rate));
    print_ratio("semaphore_acquire_release_vs_raw", ratio(ours_sem, raw_sem));
    print_value("rate_limiter_error_pct", rate_error_pct(), "%");
    const auto [share, p99] = semaphore_contended();
    print_ratio("semaphore_contended_min_share", share);
    print_value("semaphore_wait_p99_ms", p99, "ms");
    print_value("rwlock_writer_wait_max_ms", rwlock_writer_wait_max(), "ms");
    return 0;
}
