// One worker process of the demo. Each phase is one use case; the demo starts four workers per
// phase and checks what they recorded in Redis.
//   worker --phase leader|barrier|queue|redlock --id N --run RUN --redis URL [--redis URL...]
//          [--replica URL] [--seconds S] [--metrics-port P]
// The first --redis is the main server; redlock uses all of them.
#include "demo_keys.hpp"

#include <redcoord/core/runtime.hpp>
#include <redcoord/election/leader_elector.hpp>
#include <redcoord/election/leader_task.hpp>
#include <redcoord/http/metrics_server.hpp>
#include <redcoord/lock/redlock.hpp>
#include <redcoord/queue/reliable_queue.hpp>
#include <redcoord/signaling/barrier.hpp>
#include <redcoord/signaling/signal_hub.hpp>

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

// CLOCK_MONOTONIC is system-wide on Linux, so steady_clock stamps compare across processes.
std::string now_ns() {
    return std::to_string(
        std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now().time_since_epoch())
            .count());
}

struct options {
    std::string phase;
    int id = 0;
    std::string run;
    std::vector<std::string> redis;
    std::vector<std::string> replicas;
    double seconds = 6;
};

// (a) Leader-only scheduled task: a tick every 200 ms, only while leader.
int leader_phase(const options& o, redcoord::connection_pool& main, const demo::keys& k) {
    redcoord::election_options eo;
    eo.identity = "worker-" + std::to_string(o.id);
    eo.term = 1000ms;
    redcoord::leader_elector elector(main, k.election(), eo);
    redcoord::leader_task task(elector, 200ms, [&](std::uint64_t epoch, std::stop_token stop) {
        auto start = now_ns();
        std::this_thread::sleep_for(20ms);  // the "work" of one tick
        if (stop.stop_requested() || !elector.is_leader()) return;
        main.command(
            {"RPUSH", k.ticks(),
             std::to_string(o.id) + " " + std::to_string(epoch) + " " + start + " " + now_ns()});
    });
    elector.start();
    std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
    return 0;
}

// (b) Barrier: arrive at staggered times, pass together, three generations.
int barrier_phase(const options& o, redcoord::connection_pool& main, const demo::keys& k) {
    std::vector<redcoord::endpoint> replicas;
    for (auto& r : o.replicas) replicas.push_back(redcoord::parse_endpoint(r));
    redcoord::signal_hub hub(main, replicas);
    redcoord::barrier b(hub, k.barrier(), demo::workers);
    for (int round = 0; round < demo::barrier_rounds; ++round) {
        std::this_thread::sleep_for(std::chrono::milliseconds(40 * o.id));
        auto arrived = now_ns();
        auto generation = b.arrive_and_wait(10s);
        main.command({"RPUSH", k.barrier_log(),
                      std::to_string(o.id) + " " + std::to_string(generation) + " " + arrived +
                          " " + now_ns()});
    }
    return 0;
}

// (c) Work queue: take a few jobs at a time, do them, record, ack. A consumer that is killed
// holds jobs in its processing list; the others' recovery hands them out again.
int queue_phase(const options& o, redcoord::connection_pool& main, const demo::keys& k) {
    redcoord::reliable_queue_options qo;
    qo.consumer_id = "demo-worker-" + std::to_string(o.id) + "-" + o.run;
    qo.visibility_timeout = 1000ms;
    qo.heartbeat_interval = 200ms;
    qo.recover_interval = 300ms;
    redcoord::reliable_queue q(main, k.queue(), qo);
    auto deadline = clock_type::now() + std::chrono::duration<double>(o.seconds);
    while (clock_type::now() < deadline) {
        std::vector<redcoord::delivery> batch;
        if (auto d = q.pop(100ms)) batch.push_back(std::move(*d));
        while (batch.size() < 4)
            if (auto d = q.try_pop())
                batch.push_back(std::move(*d));
            else
                break;
        if (batch.empty()) {
            if (main.command({"SCARD", k.done()}).integer() >= demo::jobs) break;
            continue;
        }
        for (auto& d : batch) {
            std::this_thread::sleep_for(1ms);  // the job's work
            main.command({"SADD", k.done(), d.payload});
            main.command({"HINCRBY", k.done_count(), d.payload, "1"});
            (void)q.ack(d);
        }
    }
    return 0;
}

// (d) Redlock over all masters protecting a non-atomic read-modify-write of a counter.
int redlock_phase(const options& o, std::vector<std::unique_ptr<redcoord::connection_pool>>& pools,
                  const demo::keys& k) {
    std::vector<redcoord::connection_pool*> nodes;
    for (auto& p : pools) nodes.push_back(p.get());
    redcoord::redlock_options ro;
    ro.timing.ttl = demo::redlock_ttl;
    redcoord::redlock lock(nodes, k.resource(), ro);
    auto& main = *pools.front();
    for (int i = 0; i < demo::increments_per_worker; ++i) {
        std::lock_guard guard(lock);
        if (main.command({"INCR", k.inside()}).integer() != 1) main.command({"INCR", k.overlaps()});
        auto v = main.command({"GET", k.counter()}).maybe_text();
        main.command({"SET", k.counter(), std::to_string(v ? std::stoll(*v) + 1 : 1)});
        main.command({"DECR", k.inside()});
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"redcoord demo worker"};
    options o;
    app.add_option("--phase", o.phase)
        ->required()
        ->check(CLI::IsMember({"leader", "barrier", "queue", "redlock"}));
    app.add_option("--id", o.id)->required();
    app.add_option("--run", o.run)->required();
    app.add_option("--redis", o.redis)->required();
    app.add_option("--replica", o.replicas);
    app.add_option("--seconds", o.seconds);
    int metrics_port = 0;
    app.add_option("--metrics-port", metrics_port,
                   "Serve this worker's metrics on 127.0.0.1:N/metrics (0: off)");
    CLI11_PARSE(app, argc, argv);
    try {
        // Before the pools: objects resolve their metric series when constructed.
        std::unique_ptr<redcoord::metrics_server> metrics;
        if (metrics_port > 0) {
            auto registry = std::make_shared<redcoord::metrics_registry>();
            redcoord::runtime::shared()->set_metrics(registry);
            metrics = std::make_unique<redcoord::metrics_server>(
                registry,
                redcoord::metrics_server_options{.port = static_cast<std::uint16_t>(metrics_port)});
        }
        std::vector<std::unique_ptr<redcoord::connection_pool>> pools;
        for (auto& url : o.redis)
            pools.push_back(
                std::make_unique<redcoord::connection_pool>(redcoord::parse_endpoint(url)));
        demo::keys k{o.run};
        if (o.phase == "leader") return leader_phase(o, *pools.front(), k);
        if (o.phase == "barrier") return barrier_phase(o, *pools.front(), k);
        if (o.phase == "queue") return queue_phase(o, *pools.front(), k);
        return redlock_phase(o, pools, k);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "worker %d (%s): %s\n", o.id, o.phase.c_str(), e.what());
        return 1;
    }
}
