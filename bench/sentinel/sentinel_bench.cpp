// Redcoord on Redis Sentinel, measured against real failovers and a raw hiredis reference:
//   value sentinel_down_after_ms             the sentinels' down-after-milliseconds (config)
//   value sentinel_promotion_ms              master SIGKILL -> a replica answers ROLE master
//   value sentinel_failover_<part>_ms        master SIGKILL -> first successful operation of
//                                            <part> through the Sentinel pool (median of runs)
//   value sentinel_follow_lag_ms             median of (first operation - promotion), all parts
//   value sentinel_lock_wait_cost_us         acquire+release with vs without waiting for one
//                                            replica's acknowledgement (the failover-race option)
//   ratio sentinel_lock_vs_raw               lock acquire+release per second via Sentinel pool /
//                                            raw hiredis SET NX PX + DEL per second on the master
// Set REDCOORD_SENTINEL_BENCH_RUNS to change the failover runs per part (default 3).
#include "common.hpp"

#include <redcoord/core/errors.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/core/replication.hpp>
#include <redcoord/core/sentinel.hpp>
#include <redcoord/election/master_selector.hpp>
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/queue/reliable_queue.hpp>
#include <redcoord/signaling/signal_hub.hpp>
#include <redcoord/testing/local_sentinel.hpp>

#include <benchmark/benchmark.h>
#include <hiredis/hiredis.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <thread>

namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
using redcoord::testing::local_sentinel;
using redcoord::testing::local_sentinel_options;

local_sentinel* service;  // for the Google Benchmarks (steady state, no failover)

void raw_lock(benchmark::State& st) {
    auto* c = redisConnect("127.0.0.1", service->master().port());
    if (!c || c->err) {
        st.SkipWithError("raw connect failed");
        return;
    }
    for (auto _ : st) {
        auto* r = static_cast<redisReply*>(redisCommand(c, "SET bench:raw tok NX PX 30000"));
        freeReplyObject(r);
        r = static_cast<redisReply*>(redisCommand(c, "DEL bench:raw"));
        freeReplyObject(r);
    }
    st.SetItemsProcessed(st.iterations());
    redisFree(c);
}

void sentinel_lock(benchmark::State& st) {
    redcoord::connection_pool pool(service->endpoint());
    redcoord::distributed_lock l(pool, "bench-plain");
    for (auto _ : st) {
        if (!l.acquire(0ms)) st.SkipWithError("not acquired");
        (void)l.release();
    }
    st.SetItemsProcessed(st.iterations());
}

void sentinel_lock_wait_replica(benchmark::State& st) {
    redcoord::connection_pool pool(service->endpoint());
    redcoord::distributed_lock l(pool, "bench-wait");
    for (auto _ : st) {
        if (!l.acquire(0ms)) st.SkipWithError("not acquired");
        if (redcoord::replication_barrier(pool, 1, 100ms) < 1)
            st.SkipWithError("replica did not acknowledge");
        (void)l.release();
    }
    st.SetItemsProcessed(st.iterations());
}

BENCHMARK(raw_lock)->UseRealTime()->MinTime(1.0);
BENCHMARK(sentinel_lock)->UseRealTime()->MinTime(1.0);
BENCHMARK(sentinel_lock_wait_replica)->UseRealTime()->MinTime(1.0);

struct failover_sample {
    double promotion_ms = 0;
    double first_op_ms = 0;
};

// One real failover: `prepare` builds the part on a fresh Sentinel pool and returns the
// operation (true = success); the operation is retried from the SIGKILL on.
failover_sample measure(const std::function<std::function<bool()>(redcoord::connection_pool&,
                                                                  local_sentinel&)>& prepare) {
    local_sentinel_options o;
    o.replicas = 2;
    local_sentinel svc(o);
    redcoord::connection_pool pool(svc.endpoint(), {.max_size = 4});
    auto op = prepare(pool, svc);
    if (!op()) throw redcoord::error("operation failed before the failover");
    std::atomic<double> first_ms{-1};
    const auto t0 = clock_type::now();
    auto old = svc.kill_master();
    std::thread worker([&] {
        while (clock_type::now() - t0 < 30s) {
            try {
                if (op()) {
                    first_ms =
                        std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
                    return;
                }
            } catch (const redcoord::error&) {}
            std::this_thread::sleep_for(1ms);
        }
    });
    (void)svc.wait_promoted(old, 30s);
    double promotion = std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
    worker.join();
    if (first_ms.load() < 0)
        throw redcoord::error("no successful operation within 30 s of the failover");
    return {promotion, first_ms.load()};
}

double median(std::vector<double> v) { return redcoord::bench::percentile(std::move(v), 50); }

}  // namespace

int main(int argc, char** argv) {
    int runs = 3;
    if (const char* e = std::getenv("REDCOORD_SENTINEL_BENCH_RUNS"); e && std::atoi(e) > 0)
        runs = std::atoi(e);

    std::map<std::string, redcoord::bench::result> r;
    {
        local_sentinel_options o;
        o.replicas = 1;
        local_sentinel svc(o);
        service = &svc;
        r = redcoord::bench::run_benchmarks(argc, argv);
        service = nullptr;
    }

    using prep_fn =
        std::function<std::function<bool()>(redcoord::connection_pool&, local_sentinel&)>;
    // Each part's "operation" is its basic step through the Sentinel pool.
    std::vector<std::pair<std::string, prep_fn>> parts = {
        {"lock",
         [](redcoord::connection_pool& pool, local_sentinel&) {
             auto n = std::make_shared<int>(0);
             auto pool_ptr = &pool;
             return std::function<bool()>([n, pool_ptr] {
                 redcoord::distributed_lock l(*pool_ptr, "failover-" + std::to_string((*n)++));
                 return l.acquire(0ms).has_value();
             });
         }},
        {"election",
         [](redcoord::connection_pool& pool, local_sentinel&) {
             redcoord::election_options eo;
             eo.term = 10000ms;
             auto sel = std::make_shared<redcoord::master_selector>(pool, "bench", eo);
             return std::function<bool()>([sel] { return sel->campaign_once().leader; });
         }},
        {"signaling",
         [](redcoord::connection_pool& pool, local_sentinel& svc) {
             auto hub = std::make_shared<redcoord::signal_hub>(
                 pool, redcoord::discover_replicas(svc.endpoint()));
             auto w = std::make_shared<redcoord::waiter>(hub->listen({"bench"}));
             return std::function<bool()>([hub, w] { return hub->broadcast("bench", "x") > 0; });
         }},
        {"queue",
         [](redcoord::connection_pool& pool, local_sentinel&) {
             auto q = std::make_shared<redcoord::reliable_queue>(pool, "bench");
             return std::function<bool()>([q] {
                 q->push("x");
                 return true;
             });
         }},
    };

    std::vector<double> promotions, lags;
    std::map<std::string, double> per_part;
    for (auto& [name, prep] : parts) {
        std::vector<double> firsts;
        for (int i = 0; i < runs; ++i) {
            auto s = measure(prep);
            promotions.push_back(s.promotion_ms);
            firsts.push_back(s.first_op_ms);
            lags.push_back(s.first_op_ms - s.promotion_ms);
            std::fprintf(
                stderr,
                "sentinel failover %s run %d: promotion %.1f ms, first %s operation %.1f ms\n",
                name.c_str(), i + 1, s.promotion_ms, name.c_str(), s.first_op_ms);
        }
        per_part[name] = median(firsts);
    }

    const double plain_ns = r["sentinel_lock"].real_ns_per_iter,
                 wait_ns = r["sentinel_lock_wait_replica"].real_ns_per_iter;
    const double raw_ips = r["raw_lock"].items_per_second,
                 ours_ips = r["sentinel_lock"].items_per_second;
    redcoord::bench::print_value("sentinel_down_after_ms",
                                 static_cast<double>(local_sentinel_options{}.down_after.count()),
                                 "ms");
    redcoord::bench::print_value("sentinel_promotion_ms", median(promotions), "ms");
    for (auto& [name, prep] : parts)
        redcoord::bench::print_value("sentinel_failover_" + name + "_ms", per_part[name], "ms");
    redcoord::bench::print_value("sentinel_follow_lag_ms", median(lags), "ms");
    redcoord::bench::print_value("sentinel_lock_wait_cost_us", (wait_ns - plain_ns) / 1000.0, "us");
    redcoord::bench::print_ratio("sentinel_lock_vs_raw", raw_ips > 0 ? ours_ips / raw_ips : 0.0);
    return 0;
}
