// The primitives on a Redis Cluster of three masters against the same primitives on one
// standalone server, in the same run (issue 19):
//   ratio lock_single_cluster_vs_standalone     distributed_lock acquire+release pairs/s
//   ratio reliable_queue_cluster_vs_standalone  reliable_queue push + pop + ack cycles/s
//   value cluster_promotion_ms                  a master SIGKILLed until the cluster routes its
//                                               slots to the promoted replica (node timeout 1 s)
//   value cluster_failover_lock_ms              the same master's death until a lock on one of
//                                               its slots is acquired through the cluster pool
//   value cluster_resources_per_s               lock + release pairs/s across 10,000 resources
//                                               from 4 threads, with each master's share
// Each comparison alternates short blocks of cluster and standalone calls, so both meet the
// same machine (loopback latency drifts within seconds). The resources spread over all three
// masters; every pair is one round trip to its slot's master, as on one server.
#include "common.hpp"

#include <redcoord/core/cluster.hpp>
#include <redcoord/core/hash_slot.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/queue/reliable_queue.hpp>
#include <redcoord/testing/local_cluster.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/wait.hpp>

#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using redcoord::bench::side;

namespace {

redcoord::testing::local_cluster* cluster;
redcoord::testing::local_server* standalone;
side lock_cluster, lock_standalone, queue_cluster, queue_standalone;

// Resources named so that consecutive calls visit all three masters.
std::vector<std::string> spread(const std::string& base, std::size_t n) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < n; ++i) out.push_back(base + std::to_string(i));
    return out;
}

void lock_pair(benchmark::State& st) {
    redcoord::connection_pool cp(redcoord::parse_endpoint(cluster->url()));
    redcoord::connection_pool sp(standalone->endpoint());
    std::vector<std::unique_ptr<redcoord::distributed_lock>> cl, sl;
    for (const auto& n : spread("bench:lock:", 30)) {
        cl.push_back(std::make_unique<redcoord::distributed_lock>(
            cp, n, redcoord::lock_options{.ttl = 30s}));
        sl.push_back(std::make_unique<redcoord::distributed_lock>(
            sp, n, redcoord::lock_options{.ttl = 30s}));
    }
    std::size_t i = 0, j = 0;
    redcoord::bench::alternate(
        st,
        [&] {
            auto& l = *cl[i++ % cl.size()];
            if (!l.acquire(0ms)) st.SkipWithError("cluster lock not acquired");
            l.release();
        },
        [&] {
            auto& l = *sl[j++ % sl.size()];
            if (!l.acquire(0ms)) st.SkipWithError("standalone lock not acquired");
            l.release();
        },
        lock_cluster, lock_standalone);
}

void queue_cycle(benchmark::State& st) {
    redcoord::connection_pool cp(redcoord::parse_endpoint(cluster->url()));
    redcoord::connection_pool sp(standalone->endpoint());
    std::vector<std::unique_ptr<redcoord::reliable_queue>> cq, sq;
    for (const auto& n : spread("bench:queue:", 3)) {
        cq.push_back(std::make_unique<redcoord::reliable_queue>(cp, n));
        sq.push_back(std::make_unique<redcoord::reliable_queue>(sp, n));
    }
    std::size_t i = 0, j = 0;
    auto cycle = [&](redcoord::reliable_queue& q) {
        (void)q.push("job");
        auto d = q.pop(1s);
        if (!d) {
            st.SkipWithError("nothing popped");
            return;
        }
        (void)q.ack(*d);
    };
    redcoord::bench::alternate(
        st, [&] { cycle(*cq[i++ % cq.size()]); }, [&] { cycle(*sq[j++ % sq.size()]); },
        queue_cluster, queue_standalone);
}

BENCHMARK(lock_pair)->MinTime(3)->UseRealTime();
BENCHMARK(queue_cycle)->MinTime(3)->UseRealTime();

// 4 threads, each with its own pool, over 10,000 resources for `for_how_long`.
void resources_run(std::chrono::milliseconds for_how_long) {
    const auto url = cluster->url();
    std::atomic<std::uint64_t> pairs{0};
    std::map<std::uint16_t, std::uint64_t> per_port;
    std::mutex mu;
    std::vector<std::thread> threads;
    const auto until = std::chrono::steady_clock::now() + for_how_long;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            redcoord::connection_pool pool(redcoord::parse_endpoint(url));
            const auto map = pool.slot_map();
            std::map<std::uint16_t, std::uint64_t> mine;
            std::uint64_t n = 0;
            for (std::uint64_t i = static_cast<std::uint64_t>(t) * 2500;
                 std::chrono::steady_clock::now() < until; ++i) {
                const auto name = "bench:res:" + std::to_string(i % 10000);
                redcoord::distributed_lock l(pool, name, {.ttl = 30s});
                if (l.acquire(0ms)) {
                    l.release();
                    ++n;
                    ++mine[map->master_of(redcoord::hash_slot(name))->port];
                }
            }
            pairs += n;
            std::lock_guard g(mu);
            for (auto [p, c] : mine) per_port[p] += c;
        });
    for (auto& t : threads) t.join();
    const double seconds = std::chrono::duration<double>(for_how_long).count();
    redcoord::bench::print_value("cluster_resources_per_s", static_cast<double>(pairs) / seconds,
                                 "pairs/s");
    for (auto [p, c] : per_port)
        std::printf("value cluster_resources_share_master_%zu %.3f fraction\n",
                    cluster->index_of(p).value_or(99),
                    pairs ? static_cast<double>(c) / static_cast<double>(pairs.load()) : 0.0);
}

// SIGKILL the master of a lock's slot; time the cluster's own promotion and the lock's
// first acquisition through the same pool afterwards.
void failover_run() {
    redcoord::connection_pool pool(redcoord::parse_endpoint(cluster->url()));
    const std::string name = cluster->key_on(0, "bench:failover:");
    {
        redcoord::distributed_lock warm(pool, name, {.ttl = 500ms});
        if (warm.acquire(1s)) warm.release();
    }
    const auto killed = std::chrono::steady_clock::now();
    cluster->node(0).kill();
    std::atomic<bool> locked{false};
    std::chrono::steady_clock::time_point locked_at{};
    std::thread locker([&] {
        redcoord::distributed_lock l(pool, name, {.ttl = 2s});
        while (std::chrono::steady_clock::now() - killed < 30s) {
            try {
                if (l.acquire(0ms)) {
                    locked_at = std::chrono::steady_clock::now();
                    locked = true;
                    l.release();
                    return;
                }
            } catch (const redcoord::error&) {}
            std::this_thread::sleep_for(5ms);
        }
    });
    const auto promoted = cluster->wait_promoted(0, 30s);
    const auto promoted_at = std::chrono::steady_clock::now();
    locker.join();
    auto ms = [&](auto t) { return std::chrono::duration<double, std::milli>(t - killed).count(); };
    redcoord::bench::print_value("cluster_promotion_ms", ms(promoted_at), "ms");
    if (locked) redcoord::bench::print_value("cluster_failover_lock_ms", ms(locked_at), "ms");
    std::fprintf(stderr, "promoted node %zu\n", promoted);
}

}  // namespace

int main(int argc, char** argv) {
    redcoord::testing::local_cluster c;
    redcoord::testing::local_server s;
    cluster = &c;
    standalone = &s;
    (void)redcoord::bench::run_benchmarks(argc, argv);
    auto ratio = [](const side& a, const side& b) {
        return b.per_second() > 0 ? a.per_second() / b.per_second() : 0.0;
    };
    std::fprintf(stderr, "lock pairs/s: cluster %.0f standalone %.0f; queue cycles/s: %.0f %.0f\n",
                 lock_cluster.per_second(), lock_standalone.per_second(),
                 queue_cluster.per_second(), queue_standalone.per_second());
    redcoord::bench::print_ratio("lock_single_cluster_vs_standalone",
                                 ratio(lock_cluster, lock_standalone));
    redcoord::bench::print_ratio("reliable_queue_cluster_vs_standalone",
                                 ratio(queue_cluster, queue_standalone));
    resources_run(5s);
    failover_run();
    return 0;
}
