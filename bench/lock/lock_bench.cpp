// The lock's speed against plain-hiredis references in the same run (issue 3):
//   ratio lock_single_vs_raw                distributed_lock acquire+release pairs/s vs raw SET NX PX + EVALSHA
//   ratio lock_single_cpu_vs_raw            client CPU per pair, ours / raw (lower is better)
//   ratio redlock5_vs_raw_quorum            redlock over 5 masters vs raw "all at once, decide at 3"
//   ratio redlock5_vs_raw_sequential        redlock over 5 masters vs raw "one node after another"
//   ratio lock_contended1_vs_raw_polling    4 contenders, critical sections/s vs raw 5 +- 5 ms polling
//   ratio redlock5_contended_vs_raw_polling same over 5 masters (raw releases partial locks at once)
//   value lock_handoff_p50_us               start of one holder's unlock() to the next holder's lock()
// Contended runs use 4 threads with their own connections for 3 s each (not 4 processes for
// 10 s as in the issue) to keep the bench under two minutes.
#include "common.hpp"
#include "contended.hpp"
#include "raw_clients.hpp"

#include <redcoord/core/token.hpp>
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/lock/redlock.hpp>
#include <redcoord/testing/local_server.hpp>

#include <benchmark/benchmark.h>

#include <cstdio>
#include <memory>

using namespace std::chrono_literals;

namespace {

std::vector<std::unique_ptr<redcoord::testing::local_server>>* servers;

std::vector<std::uint16_t> ports() {
    std::vector<std::uint16_t> p;
    for (auto& s : *servers) p.push_back(s->port());
    return p;
}

void raw_single_pair(benchmark::State& st) {
    auto* c = lock_bench::raw_connect((*servers)[0]->port());
    const auto sha = lock_bench::raw_load_release(c);
    const std::string key = "bench:raw:single", token = redcoord::random_token(), ttl = "30000";
    for (auto _ : st) {
        if (!lock_bench::raw_try(c, key, token, ttl)) st.SkipWithError("raw lock not acquired");
        lock_bench::raw_release(c, sha, key, token);
    }
    st.SetItemsProcessed(st.iterations());
    redisFree(c);
}

void lock_single_pair(benchmark::State& st) {
    redcoord::connection_pool pool((*servers)[0]->endpoint());
    redcoord::distributed_lock lock(pool, "bench:single", {.ttl = 30s});
    for (auto _ : st) {
        if (!lock.acquire(0ms)) st.SkipWithError("lock not acquired");
        (void)lock.release();
    }
    st.SetItemsProcessed(st.iterations());
}

void raw_quorum5_pair(benchmark::State& st) {
    lock_bench::raw_quorum q(ports());
    std::string sha;
    for (std::size_t i = 0; i < q.size(); ++i) sha = lock_bench::raw_load_release(q.node(i));
    const std::string key = "bench:raw:quorum", token = redcoord::random_token();
    const std::vector<std::string> acquire{"SET", key, token, "NX", "PX", "30000"};
    const std::vector<std::string> release{"EVALSHA", sha, "1", key, token};
    for (auto _ : st) {
        if (q.round(acquire, 3) < 3) st.SkipWithError("raw quorum not acquired");
        (void)q.round(release, 3);
    }
    st.SetItemsProcessed(st.iterations());
}

void raw_sequential5_pair(benchmark::State& st) {
    std::vector<redisContext*> cs;
    std::string sha;
    for (auto p : ports()) {
        cs.push_back(lock_bench::raw_connect(p));
        sha = lock_bench::raw_load_release(cs.back());
    }
    const std::string key = "bench:raw:sequential", token = redcoord::random_token(), ttl = "30000";
    for (auto _ : st) {
        int ok = 0;
        for (auto* c : cs) ok += lock_bench::raw_try(c, key, token, ttl) ? 1 : 0;
        if (ok < 3) st.SkipWithError("raw sequential not acquired");
        for (auto* c : cs) lock_bench::raw_release(c, sha, key, token);
    }
    st.SetItemsProcessed(st.iterations());
    for (auto* c : cs) redisFree(c);
}

void redlock5_pair(benchmark::State& st) {
    std::vector<std::unique_ptr<redcoord::connection_pool>> pools;
    std::vector<redcoord::connection_pool*> nodes;
    for (auto& s : *servers) {
        pools.push_back(std::make_unique<redcoord::connection_pool>(s->endpoint()));
        nodes.push_back(pools.back().get());
    }
    redcoord::redlock lock(nodes, "bench:redlock", {.ttl = 30s});
    for (auto _ : st) {
        if (!lock.acquire(0ms)) st.SkipWithError("redlock not acquired");
        (void)lock.release();
    }
    st.SetItemsProcessed(st.iterations());
}

// Alternating raw/ours keeps slow drifts of machine load from favouring either side.
BENCHMARK(raw_single_pair)->MinTime(1.5)->UseRealTime();
BENCHMARK(lock_single_pair)->MinTime(1.5)->UseRealTime();
BENCHMARK(raw_quorum5_pair)->MinTime(1.5)->UseRealTime();
BENCHMARK(redlock5_pair)->MinTime(1.5)->UseRealTime();
BENCHMARK(raw_sequential5_pair)->MinTime(1.5)->UseRealTime();

std::int64_t evalsha_calls(redcoord::testing::local_server& s) {
    const auto info = s.command({"INFO", "commandstats"}).text();
    const auto at = info.find("cmdstat_evalsha:calls=");
    return at == std::string::npos ? 0 : std::stoll(info.substr(at + 22));
}

}  // namespace

int main(int argc, char** argv) {
    auto s = redcoord::testing::start_masters(5);
    servers = &s;
    auto r = redcoord::bench::run_benchmarks(argc, argv);
    auto ratio = [&](const char* ours, const char* raw) {
        return r[raw].items_per_second > 0 ? r[ours].items_per_second / r[raw].items_per_second : 0.0;
    };
    using redcoord::bench::print_ratio;
    using redcoord::bench::print_value;
    print_ratio("lock_single_vs_raw", ratio("lock_single_pair", "raw_single_pair"));
    print_ratio("lock_single_cpu_vs_raw", r["raw_single_pair"].cpu_ns_per_iter > 0
                                              ? r["lock_single_pair"].cpu_ns_per_iter / r["raw_single_pair"].cpu_ns_per_iter
                                              : 0.0);
    print_ratio("redlock5_vs_raw_quorum", ratio("redlock5_pair", "raw_quorum5_pair"));
    print_ratio("redlock5_vs_raw_sequential", ratio("redlock5_pair", "raw_sequential5_pair"));

    const auto run = 3s;
    const int threads = 4;
    auto raw1 = lock_bench::raw_polling_single(s[0]->port(), threads, run);
    const auto calls0 = evalsha_calls(*s[0]);
    auto ours1 = lock_bench::lock_contended_single(s[0]->port(), threads, run);
    std::fprintf(stderr, "contended single: ours %.0f/s (%.2f EVALSHA per section), raw polling %.0f/s\n",
                 ours1.sections_per_s, static_cast<double>(evalsha_calls(*s[0]) - calls0) / static_cast<double>(ours1.sections),
                 raw1.sections_per_s);
    print_ratio("lock_contended1_vs_raw_polling", raw1.sections_per_s > 0 ? ours1.sections_per_s / raw1.sections_per_s : 0.0);
    auto raw5 = lock_bench::raw_polling_quorum(ports(), threads, run);
    auto ours5 = lock_bench::redlock_contended(ports(), threads, run);
    std::fprintf(stderr, "contended redlock5: ours %.0f/s, raw polling %.0f/s\n", ours5.sections_per_s, raw5.sections_per_s);
    print_ratio("redlock5_contended_vs_raw_polling", raw5.sections_per_s > 0 ? ours5.sections_per_s / raw5.sections_per_s : 0.0);

    auto handoffs = lock_bench::single_handoffs_us(s[0]->port(), 2s);
    std::fprintf(stderr, "handoffs measured: %zu\n", handoffs.size());
    print_value("lock_handoff_p50_us", redcoord::bench::percentile(handoffs, 50), "us");
    return 0;
}
