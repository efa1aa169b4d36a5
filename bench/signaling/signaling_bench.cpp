// ./scripts/bench signaling — signal wake latency (broadcast to waiter return, with master +
// replica links) against raw PUBLISH -> SUBSCRIBE through plain hiredis in the same run,
// unicast latency, and the round time of an 8-party barrier.
//   ratio signal_wake_tls_vs_plain   p50 wake latency through a master's plaintext port over p50
//                                    through its TLS port (alternating; 1.0: TLS costs nothing)
#include "common.hpp"

#include <redcoord/core/pool.hpp>
#include <redcoord/signaling/barrier.hpp>
#include <redcoord/signaling/signal_hub.hpp>
#include <redcoord/testing/local_server.hpp>

#include <benchmark/benchmark.h>
#include <hiredis/hiredis.h>

#include <cstdlib>
#include <memory>
#include <thread>

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

std::unique_ptr<redcoord::testing::local_server> master, replica;
std::vector<double> plain_wake_us, tls_wake_us;
std::vector<double> ours_us, raw_us, unicast_us, ours_pub_us, raw_pub_us, ours_wait_us;
double barrier_round_ms = 0;

double micros(clock_type::time_point a, clock_type::time_point b) {
    return std::chrono::duration<double, std::micro>(b - a).count();
}

void wait_links(redcoord::signal_hub& hub, std::size_t n) {
    for (int i = 0; i < 2000 && hub.connected_links() < n; ++i) std::this_thread::sleep_for(1ms);
}

// Ours against the raw reference, alternating iteration by iteration so both see the same
// load on a shared box. Ours: broadcast on the master, the waiter (subscribed on master and
// replica) returns. Raw: one hiredis connection PUBLISHes, another SUBSCRIBEd reads it.
void BM_signal_wake_vs_raw(benchmark::State& state) {
    redcoord::connection_pool pool(master->endpoint());
    redcoord::signal_options o;
    if (const char* spin = std::getenv("BENCH_SPIN_US"))
        o.spin = std::chrono::microseconds(std::atoi(spin));
    redcoord::signal_hub hub(pool, {replica->endpoint()}, o);
    auto w = hub.listen({"bench:wake"});
    wait_links(hub, 2);
    redisContext* pub = redisConnect("127.0.0.1", master->port());
    redisContext* sub = redisConnect("127.0.0.1", master->port());
    if (!pub || pub->err || !sub || sub->err) {
        state.SkipWithError("connect failed");
        return;
    }
    freeReplyObject(redisCommand(sub, "SUBSCRIBE %s", "bench:raw"));
    for (auto _ : state) {
        auto t0 = clock_type::now();
        freeReplyObject(redisCommand(pub, "PUBLISH %s %s", "bench:raw", "x"));
        raw_pub_us.push_back(micros(t0, clock_type::now()));
        void* msg = nullptr;
        if (redisGetReply(sub, &msg) != REDIS_OK) {
            state.SkipWithError("read failed");
            break;
        }
        auto t1 = clock_type::now();
        freeReplyObject(msg);
        raw_us.push_back(micros(t0, t1));

        t0 = clock_type::now();
        hub.broadcast("bench:wake", "x");
        const auto published = clock_type::now();
        auto s = w.wait(1000ms);
        t1 = clock_type::now();
        ours_pub_us.push_back(micros(t0, published));
        ours_wait_us.push_back(micros(published, t1));
        if (!s) {
            state.SkipWithError("signal lost");
            break;
        }
        ours_us.push_back(micros(t0, t1));
    }
    redisFree(pub);
    redisFree(sub);
}

// Unicast: the Lua script picks one of 10 waiters; the bench waits on the one it picked.
void BM_unicast(benchmark::State& state) {
    redcoord::connection_pool pool(master->endpoint());
    redcoord::signal_hub hub(pool, {replica->endpoint()});
    std::vector<redcoord::waiter> ws;
    for (int i = 0; i < 10; ++i) ws.push_back(hub.listen_unicast("bench:uni"));
    wait_links(hub, 2);
    for (auto _ : state) {
        const auto t0 = clock_type::now();
        if (!hub.unicast("bench:uni", "x")) {
            state.SkipWithError("no receiver");
            break;
        }
        bool got = false;
        while (!got && clock_type::now() - t0 < 1s)
            for (auto& w : ws)
                if (w.try_wait()) {
                    got = true;
                    break;
                }
        const auto t1 = clock_type::now();
        if (!got) {
            state.SkipWithError("unicast lost");
            break;
        }
        unicast_us.push_back(micros(t0, t1));
    }
}

// Eight parties (threads, each with its own hub and links) pass one barrier round after round.
void BM_barrier8_round(benchmark::State& state) {
    constexpr int parties = 8;
    const int rounds = static_cast<int>(state.max_iterations);
    std::vector<std::thread> ts;
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    for (int p = 1; p < parties; ++p)
        ts.emplace_back([&] {
            redcoord::connection_pool pool(master->endpoint());
            redcoord::signal_hub hub(pool);
            redcoord::barrier b(hub, "bench:b8", parties);
            ++ready;
            while (!go) std::this_thread::yield();
            for (int r = 0; r < rounds; ++r) (void)b.arrive_and_wait(10000ms);
        });
    redcoord::connection_pool pool(master->endpoint());
    redcoord::signal_hub hub(pool);
    redcoord::barrier b(hub, "bench:b8", parties);
    while (ready < parties - 1) std::this_thread::yield();
    go = true;
    const auto t0 = clock_type::now();
    for (auto _ : state) (void)b.arrive_and_wait(10000ms);
    const auto t1 = clock_type::now();
    for (auto& t : ts) t.join();
    barrier_round_ms = micros(t0, t1) / 1000.0 / rounds;
}

}  // namespace

// A hub on a plaintext master against a hub on a TLS master (no replicas), alternating
// broadcast -> waiter return iteration by iteration.
void BM_signal_wake_tls_vs_plain(benchmark::State& state) {
    const auto both = redcoord::bench::start_tls_and_plain();
    redcoord::connection_pool tls_pool(both->tls), plain_pool(both->plain);
    redcoord::signal_hub tls_hub(tls_pool, {}), plain_hub(plain_pool, {});
    auto tls_w = tls_hub.listen({"bench:tls"});
    auto plain_w = plain_hub.listen({"bench:plain"});
    wait_links(tls_hub, 1);
    wait_links(plain_hub, 1);
    auto once = [&](redcoord::signal_hub& hub, redcoord::waiter& w, std::vector<double>& out) {
        const auto t0 = clock_type::now();
        hub.broadcast(&hub == &tls_hub ? "bench:tls" : "bench:plain", "x");
        if (!w.wait(1000ms)) {
            state.SkipWithError("signal lost");
            return false;
        }
        out.push_back(micros(t0, clock_type::now()));
        return true;
    };
    for (auto _ : state)
        if (!once(plain_hub, plain_w, plain_wake_us) || !once(tls_hub, tls_w, tls_wake_us)) break;
}

int main(int argc, char** argv) {
    master = std::make_unique<redcoord::testing::local_server>();
    replica = redcoord::testing::local_server::replica_of(*master);
    benchmark::RegisterBenchmark("signal_wake_vs_raw", BM_signal_wake_vs_raw)
        ->Iterations(5000)
        ->UseRealTime();
    benchmark::RegisterBenchmark("signal_wake_tls_vs_plain", BM_signal_wake_tls_vs_plain)
        ->Iterations(3000)
        ->UseRealTime();
    benchmark::RegisterBenchmark("unicast", BM_unicast)->Iterations(2000)->UseRealTime();
    benchmark::RegisterBenchmark("barrier8_round", BM_barrier8_round)
        ->Iterations(200)
        ->UseRealTime();
    (void)redcoord::bench::run_benchmarks(argc, argv);

    using redcoord::bench::percentile;
    const double ours50 = percentile(ours_us, 50), raw50 = percentile(raw_us, 50);
    redcoord::bench::print_value("signal_wake_p50_us", ours50, "us");
    redcoord::bench::print_value("signal_wake_p99_us", percentile(ours_us, 99), "us");
    redcoord::bench::print_ratio("signal_wake_p50_vs_raw", raw50 > 0 ? ours50 / raw50 : 0);
    redcoord::bench::print_value("unicast_p50_us", percentile(unicast_us, 50), "us");
    redcoord::bench::print_value("barrier8_round_ms", barrier_round_ms, "ms");
    const double tls50 = percentile(tls_wake_us, 50), plain50 = percentile(plain_wake_us, 50);
    redcoord::bench::print_value("signal_wake_tls_p50_us", tls50, "us");
    redcoord::bench::print_ratio("signal_wake_tls_vs_plain", tls50 > 0 ? plain50 / tls50 : 0);
    std::fprintf(stderr,
                 "raw publish->subscribe p50 %.1f us, p99 %.1f us; publish part p50: raw %.1f us, "
                 "ours %.1f us; "
                 "ours after publish p50 %.1f us\n",
                 raw50, percentile(raw_us, 99), percentile(raw_pub_us, 50),
                 percentile(ours_pub_us, 50), percentile(ours_wait_us, 50));
    replica.reset();
    master.reset();
    return 0;
}
