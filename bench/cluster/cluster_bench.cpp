// The primitives on a Redis Cluster of three masters against the same primitives on one
// standalone server, in the same run (issue 19):
//   ratio command_cluster_node_vs_standalone    the ceiling: SET round trips/s on a plain
//                                               connection to a cluster master vs the server
//   ratio lock_single_cluster_vs_standalone     distributed_lock acquire+release pairs/s
//   ratio reliable_queue_cluster_vs_standalone  reliable_queue push + pop + ack cycles/s
//   ratio signal_wake_cluster_vs_standalone     broadcast -> waiter woken round trips/s
//   value cluster_promotion_ms                  a master SIGKILLed until the cluster routes its
//                                               slots to the promoted replica (node timeout 1 s)
//   value cluster_failover_{lock,queue,election,signaling}_ms
//                                               the same master's death until, through the
//                                               cluster pool: a lock on one of its slots is
//                                               acquired; a push + pop + ack on a queue there
//                                               completes; the elector that led there leads again
//                                               by a round sent after the death; a signal
//                                               broadcast then reaches its waiter (the hub's link
//                                               was on that master)
//   value cluster_route_overhead_us             what routing adds to one borrow + return
//   value cluster_resources_per_s               lock + release pairs/s across 10,000 resources
//                                               from 4 processes, with each master's share
// Each comparison alternates short blocks of cluster and standalone calls, so both meet the
// same machine (loopback latency drifts within seconds). The resources spread over all three
// masters; every pair is one round trip to its slot's master, as on one server.
#include "common.hpp"

#include <redcoord/core/cluster.hpp>
#include <redcoord/core/connection.hpp>
#include <redcoord/core/hash_slot.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/election/leader_elector.hpp>
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/queue/reliable_queue.hpp>
#include <redcoord/signaling/signal_hub.hpp>
#include <redcoord/testing/local_cluster.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/wait.hpp>

#include <benchmark/benchmark.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <future>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <sys/mman.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <utility>
#include <vector>

using namespace std::chrono_literals;
using redcoord::bench::side;

namespace {

redcoord::testing::local_cluster* cluster;
redcoord::testing::local_server* standalone;
side raw_cluster, raw_standalone, lock_cluster, lock_standalone, queue_cluster, queue_standalone,
    wake_cluster, wake_standalone;

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
            cp, n, redcoord::lock_options{.timing = {.ttl = 30s}}));
        sl.push_back(std::make_unique<redcoord::distributed_lock>(
            sp, n, redcoord::lock_options{.timing = {.ttl = 30s}}));
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

// The ceiling: one SET on a plain connection to a cluster master against the standalone
// server, with no routing at all (the cluster's nodes share the machine with its bus).
void raw_command(benchmark::State& st) {
    const auto m = cluster->key_on(0, "bench:raw:");
    redcoord::connection node(cluster->node(0).endpoint());
    redcoord::connection one(standalone->endpoint());
    redcoord::bench::alternate(
        st,
        [&] {
            (void)node.command({"SET", m, "v"});
        },
        [&] {
            (void)one.command({"SET", m, "v"});
        },
        raw_cluster, raw_standalone);
}

// One broadcast and its waiter's wake-up, through each hub in turn.
void wake_round(benchmark::State& st) {
    redcoord::connection_pool cp(redcoord::parse_endpoint(cluster->url()));
    redcoord::connection_pool sp(standalone->endpoint());
    redcoord::signal_hub ch(cp), sh(sp);
    auto cw = ch.listen({"bench:wake"});
    auto sw = sh.listen({"bench:wake"});
    auto round = [&](redcoord::signal_hub& hub, redcoord::waiter& w) {
        (void)hub.broadcast("bench:wake", "x");
        if (!w.wait(1s)) st.SkipWithError("signal not delivered");
    };
    redcoord::bench::alternate(
        st, [&] { round(ch, cw); }, [&] { round(sh, sw); }, wake_cluster, wake_standalone);
}

BENCHMARK(raw_command)->MinTime(3)->UseRealTime();
BENCHMARK(lock_pair)->MinTime(3)->UseRealTime();
BENCHMARK(queue_cycle)->MinTime(3)->UseRealTime();
BENCHMARK(wake_round)->MinTime(3)->UseRealTime();

// What routing adds to a borrow: borrow_for() + return on the cluster pool against the
// standalone pool, nothing sent (the map is in hand; a node pool per master).
void route_overhead() {
    redcoord::connection_pool cp(redcoord::parse_endpoint(cluster->url()));
    redcoord::connection_pool sp(standalone->endpoint());
    std::vector<std::string> keys;
    for (int i = 0; i < 64; ++i) keys.push_back("bench:route:" + std::to_string(i));
    auto per_borrow_us = [&](redcoord::connection_pool& p) {
        for (const auto& k : keys) (void)p.borrow_for(k);  // connected to every master
        constexpr int n = 200'000;
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < n; ++i) (void)p.borrow_for(keys[static_cast<std::size_t>(i) % 64]);
        return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                   .count() /
               n;
    };
    const double cluster_us = per_borrow_us(cp), standalone_us = per_borrow_us(sp);
    std::fprintf(stderr, "borrow + return: cluster %.3f us, standalone %.3f us\n", cluster_us,
                 standalone_us);
    redcoord::bench::print_value("cluster_route_overhead_us", cluster_us - standalone_us, "us");
}

// 4 processes (forked, each with its own pool), lock + release over 10,000 resources for
// `for_how_long`; each process counts its pairs, and which master served each, in shared memory.
void resources_run(std::chrono::milliseconds for_how_long) {
    constexpr int procs = 4;
    struct counts {
        std::atomic<std::uint64_t> pairs{0};
        std::array<std::atomic<std::uint64_t>, 8> per_master{};
    };
    void* mem =
        ::mmap(nullptr, sizeof(counts), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) std::abort();
    auto* shared = new (mem) counts{};
    const auto url = cluster->url();
    const auto until = std::chrono::steady_clock::now() + for_how_long;
    std::vector<pid_t> kids;
    for (int p = 0; p < procs; ++p) {
        const pid_t pid = ::fork();
        if (pid < 0) std::abort();
        if (pid == 0) {
            {
                redcoord::connection_pool pool(redcoord::parse_endpoint(url));
                const auto map = pool.slot_map();
                for (std::uint64_t i = static_cast<std::uint64_t>(p) * 2500;
                     std::chrono::steady_clock::now() < until; ++i) {
                    const auto name = "bench:res:" + std::to_string(i % 10000);
                    redcoord::distributed_lock l(pool, name, {.timing = {.ttl = 30s}});
                    if (!l.acquire(0ms)) continue;
                    l.release();
                    ++shared->pairs;
                    const auto m =
                        cluster->index_of(map->master_of(redcoord::hash_slot(name))->port);
                    ++shared->per_master.at(m.value_or(7));
                }
            }
            ::_exit(0);
        }
        kids.push_back(pid);
    }
    for (auto pid : kids) {
        int status = 0;
        if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            std::abort();
    }
    const double seconds = std::chrono::duration<double>(for_how_long).count();
    const auto pairs = static_cast<double>(shared->pairs.load());
    redcoord::bench::print_value("cluster_resources_per_s", pairs / seconds, "pairs/s");
    for (std::size_t m = 0; m < 3; ++m)
        redcoord::bench::print_value(
            "cluster_resources_share_master_" + std::to_string(m),
            pairs > 0 ? static_cast<double>(shared->per_master[m].load()) / pairs : 0.0,
            "fraction");
    ::munmap(mem, sizeof(counts));
}

// SIGKILL master 0 while a lock, a queue, an elector and a signal waiter use it; time the
// cluster's own promotion and each primitive's first success afterwards.
void failover_run() {
    using clock = std::chrono::steady_clock;
    redcoord::connection_pool pool(redcoord::parse_endpoint(cluster->url()));
    const auto lock_name = cluster->key_on(0, "bench:failover:lock:");
    redcoord::reliable_queue queue(pool, cluster->key_on(0, "bench:failover:queue:"));
    redcoord::election_options eo;
    eo.term = 2s;
    eo.identity = "bench";
    redcoord::leader_elector elector(pool, cluster->key_on(0, "bench:failover:election:"), eo);
    elector.start();
    // The hub's link is on the first seed, node 0: its death moves the link to the next seed.
    redcoord::signal_hub hub(pool);
    auto waiter = hub.listen({"bench:failover:signal"});
    (void)redcoord::testing::eventually([&] { return elector.is_leader(); }, 10s);

    const auto killed = clock::now();
    cluster->node(0).kill();
    auto until_works = [&](auto works) {
        return std::async(std::launch::async, [&, works]() -> std::optional<clock::time_point> {
            while (clock::now() - killed < 30s) {
                try {
                    if (works()) return clock::now();
                } catch (const redcoord::error&) {}
                std::this_thread::sleep_for(5ms);
            }
            return std::nullopt;
        });
    };
    auto lock_at = until_works([&] {
        redcoord::distributed_lock l(pool, lock_name, {.timing = {.ttl = 2s}});
        if (!l.acquire(0ms)) return false;
        l.release();
        return true;
    });
    auto queue_at = until_works([&] {
        (void)queue.push("probe");
        auto d = queue.pop(50ms);
        return d && queue.ack(*d);
    });
    auto election_at = until_works([&] {
        // Leading on a round sent after the death: deadline = sent_at + term - drift.
        const auto d = elector.deadline();
        return elector.is_leader() && d && *d > killed + eo.term;
    });
    auto signal_at = until_works([&] {
        (void)hub.broadcast("bench:failover:signal", "probe");
        return waiter.wait(20ms).has_value();
    });
    const auto promoted = cluster->wait_promoted(0, 30s);
    const auto promoted_at = clock::now();
    auto ms = [&](clock::time_point t) {
        return std::chrono::duration<double, std::milli>(t - killed).count();
    };
    redcoord::bench::print_value("cluster_promotion_ms", ms(promoted_at), "ms");
    const std::pair<const char*, std::future<std::optional<clock::time_point>>*> each[] = {
        {"cluster_failover_lock_ms", &lock_at},
        {"cluster_failover_queue_ms", &queue_at},
        {"cluster_failover_election_ms", &election_at},
        {"cluster_failover_signaling_ms", &signal_at}};
    for (const auto& [name, at] : each) {
        if (auto t = at->get())
            redcoord::bench::print_value(name, ms(*t), "ms");
        else
            std::fprintf(stderr, "%s: not working again within 30 s\n", name);
    }
    elector.stop();
    std::fprintf(stderr, "promoted node %zu\n", promoted);
}

}  // namespace

int main(int argc, char** argv) {
    // The comparisons: three masters against one server, neither with replicas, so each side
    // does the same work per call. The failover run below has a replica per master.
    redcoord::testing::cluster_options no_replicas;
    no_replicas.replicas_per_master = 0;
    auto c = std::make_unique<redcoord::testing::local_cluster>(no_replicas);
    redcoord::testing::local_server s;
    cluster = c.get();
    standalone = &s;
    (void)redcoord::bench::run_benchmarks(argc, argv);
    auto ratio = [](const side& a, const side& b) {
        return b.per_second() > 0 ? a.per_second() / b.per_second() : 0.0;
    };
    std::fprintf(stderr,
                 "per second, cluster / standalone: SET %.0f / %.0f; lock pairs %.0f / %.0f; queue "
                 "cycles %.0f / %.0f; wakes %.0f / %.0f\n",
                 raw_cluster.per_second(), raw_standalone.per_second(), lock_cluster.per_second(),
                 lock_standalone.per_second(), queue_cluster.per_second(),
                 queue_standalone.per_second(), wake_cluster.per_second(),
                 wake_standalone.per_second());
    redcoord::bench::print_ratio("command_cluster_node_vs_standalone",
                                 ratio(raw_cluster, raw_standalone));
    redcoord::bench::print_ratio("lock_single_cluster_vs_standalone",
                                 ratio(lock_cluster, lock_standalone));
    redcoord::bench::print_ratio("reliable_queue_cluster_vs_standalone",
                                 ratio(queue_cluster, queue_standalone));
    redcoord::bench::print_ratio("signal_wake_cluster_vs_standalone",
                                 ratio(wake_cluster, wake_standalone));
    route_overhead();
    resources_run(5s);
    c = std::make_unique<redcoord::testing::local_cluster>();
    cluster = c.get();
    failover_run();
    return 0;
}
