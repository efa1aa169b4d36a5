// A process for the jobs fault tests, SIGKILLed at random points; SIGTERM stops it gracefully.
//
//   jobs_fault_child worker <redis-url> <log-url> <queue> <name> <threads> <lease-ms> <work-us>
//                   <prefetch>
//     Runs a job_worker whose handler records each start on the log server (RPUSH log
//     "<job>|<name>|<attempt>|<wall ms>") and fails the first attempt of every job whose payload
//     ends in 0 (10% of them), after about <work-us> microseconds of work. Exits 3 when the
//     worker lost a job it held (a settlement refused).
//   jobs_fault_child scheduler <redis-url> <queue> <name> <term-ms> [<replicas>]
//     Runs a job_scheduler with identity <name> (its ticks WAIT for <replicas>, default 0).

#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/jobs/job_queue.hpp>
#include <redcoord/jobs/job_scheduler.hpp>
#include <redcoord/jobs/job_worker.hpp>

#include <csignal>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>

namespace {
volatile std::sig_atomic_t stop_requested = 0;
void on_term(int) { stop_requested = 1; }

std::string wall_ms() {
    return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count());
}

void wait_for_term() {
    while (!stop_requested) std::this_thread::sleep_for(std::chrono::milliseconds(20));
}
}  // namespace

int main(int argc, char** argv) {
    std::signal(SIGTERM, on_term);
    const std::string mode = argc > 1 ? argv[1] : "";
    if (!((mode == "worker" && argc == 10) || (mode == "scheduler" && (argc == 6 || argc == 7)))) {
        std::fprintf(stderr, "usage: %s worker|scheduler url queue name ...\n", argv[0]);
        return 2;
    }
    // A worker's arguments after the URL are shifted by its log URL.
    const int at = mode == "worker" ? 1 : 0;
    auto ep = redcoord::parse_endpoint(argv[2]);
    ep.command_timeout = std::chrono::seconds(10);
    const std::string name = argv[4 + at];
    redcoord::connection_pool pool(ep, {.max_size = 12});
    redcoord::job_queue_options qo;
    if (mode == "scheduler" && argc == 7) {
        qo.replication.replicas = std::stoul(argv[6]);
        qo.replication.timeout = std::chrono::milliseconds(1000);
    }
    redcoord::job_queue q(pool, argv[3 + at], qo);
    if (mode == "scheduler") {
        redcoord::job_scheduler s(
            q, {.identity = name, .term = std::chrono::milliseconds(std::stol(argv[5]))});
        s.start();
        std::printf("scheduler %s started\n", name.c_str());
        std::fflush(stdout);
        wait_for_term();
        s.stop();
        return 0;
    }
    redcoord::connection_pool log(redcoord::parse_endpoint(argv[3]), {.max_size = 4});
    const auto threads = static_cast<std::size_t>(std::stoul(argv[6]));
    const std::chrono::milliseconds lease(std::stol(argv[7]));
    const std::chrono::microseconds work(std::stol(argv[8]));
    redcoord::job_worker w(
        q,
        [&](redcoord::job_context& j) -> std::string {
            {
                auto c = log.borrow();
                const auto r = c->command(
                    {"RPUSH", "log",
                     j.id() + "|" + name + "|" + std::to_string(j.attempt()) + "|" + wall_ms()});
                if (r.is_error()) throw std::runtime_error(r.text());
            }
            std::this_thread::sleep_for(work);
            if (j.attempt() == 1 && !j.payload().empty() && j.payload().back() == '0')
                throw std::runtime_error("first attempts of every tenth job fail");
            return "ok";
        },
        {.threads = threads,
         .lease = lease,
         .poll_timeout = std::chrono::milliseconds(200),
         .prefetch = static_cast<std::size_t>(std::stoul(argv[9]))});
    w.start();
    std::printf("worker %s started\n", name.c_str());
    std::fflush(stdout);
    wait_for_term();
    w.stop();
    const auto s = w.stats();
    std::printf("worker %s stopped: completed %llu failed %llu lost %llu errors %llu\n",
                name.c_str(), static_cast<unsigned long long>(s.completed),
                static_cast<unsigned long long>(s.failed), static_cast<unsigned long long>(s.lost),
                static_cast<unsigned long long>(s.errors));
    return s.lost == 0 ? 0 : 3;
}
