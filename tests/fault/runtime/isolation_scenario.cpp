#include "isolation_scenario.hpp"

#include <redcoord/core/detail/serial_executor.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/election/leader_elector.hpp>
#include <redcoord/jobs/job_queue.hpp>
#include <redcoord/jobs/job_worker.hpp>
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/queue/reliable_queue.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/wait.hpp>

#include <algorithm>
#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace redcoord::scenario {

namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
using redcoord::testing::local_server;

void require(bool ok, const char* what) {
    if (!ok) throw std::runtime_error(std::string("isolation scenario: ") + what);
}

// Resumes the paused servers when the run ends, before the objects using them are destroyed
// (their destructors talk to them).
struct resume_on_exit {
    explicit resume_on_exit(std::vector<local_server*> s) : servers(std::move(s)) {}
    resume_on_exit(const resume_on_exit&) = delete;
    resume_on_exit& operator=(const resume_on_exit&) = delete;
    std::vector<local_server*> servers;
    ~resume_on_exit() {
        for (auto* s : servers) s->resume();
    }
};

}  // namespace

isolation_result run_isolation(std::chrono::milliseconds run_for, int locks) {
    local_server healthy, queue_srv, jobs_srv, elect_srv;
    auto rt = runtime::create();
    connection_pool healthy_pool(healthy.endpoint(), {}, rt);
    connection_pool queue_pool(queue_srv.endpoint(), {}, rt);
    connection_pool jobs_pool(jobs_srv.endpoint(), {}, rt);
    connection_pool elect_pool(elect_srv.endpoint(), {}, rt);

    // A consumer holding a message: its heartbeats and recovery are ticks.
    reliable_queue consumer(queue_pool, "iso");
    consumer.push("m");
    auto held_message = consumer.pop(2s);
    require(held_message.has_value(), "the consumer got no message");

    // A worker running a job until its stop token fires.
    job_queue jobs(jobs_pool, "iso");
    std::atomic<bool> job_started{false};
    job_worker worker(jobs,
                      [&](job_context& ctx) {
                          job_started = true;
                          const auto until = clock_type::now() + 60s;
                          while (!ctx.stop_token().stop_requested() && clock_type::now() < until)
                              std::this_thread::sleep_for(20ms);
                          return std::string("done");
                      },
                      {.lease = 1500ms});
    (void)jobs.add("job");
    worker.start();
    require(redcoord::testing::eventually([&] { return job_started.load(); }, 10s),
            "the job did not start");

    // An elector whose rounds wait for a replica (none answers: WAIT runs its timeout).
    leader_elector elector(elect_pool, "iso",
                           {.identity = "e", .term = 1000ms, .replication = {.replicas = 1}});
    elector.start();

    // Two locks lost at once whose on_lost slots take 5 s each.
    std::atomic<int> slow_slots{0};
    std::vector<std::unique_ptr<distributed_lock>> slow;
    std::vector<boost::signals2::scoped_connection> slow_conns;
    for (int i = 0; i < 2; ++i) {
        slow.push_back(std::make_unique<distributed_lock>(
            healthy_pool, "iso-slow-" + std::to_string(i), lock_options{.timing = {.ttl = 300ms}}));
        slow_conns.emplace_back(slow.back()->on_lost([&](const std::string&) {
            ++slow_slots;
            std::this_thread::sleep_for(5s);
        }));
        require(slow.back()->try_lock(), "a slow lock was not taken");
    }

    std::vector<std::unique_ptr<distributed_lock>> healthy_locks;
    for (int i = 0; i < locks; ++i) {
        healthy_locks.push_back(std::make_unique<distributed_lock>(
            healthy_pool, "iso-" + std::to_string(i),
            lock_options{.timing = {.ttl = 1000ms}, .watchdog = true}));
        require(healthy_locks.back()->try_lock(), "a healthy lock was not taken");
    }

    const resume_on_exit resume({&queue_srv, &jobs_srv, &elect_srv});
    queue_srv.pause();
    jobs_srv.pause();
    elect_srv.pause();

    const auto n = static_cast<std::size_t>(locks);
    std::vector<clock_type::time_point> until(n), changed(n, clock_type::now());
    for (std::size_t i = 0; i < n; ++i) until[i] = healthy_locks[i]->current()->valid_until;
    auto gap = clock_type::duration::zero();
    isolation_result r;
    const auto start = clock_type::now();
    while (clock_type::now() - start < run_for && r.locks_lost == 0) {
        const auto now = clock_type::now();
        for (std::size_t i = 0; i < n; ++i) {
            if (healthy_locks[i]->lost()) {
                ++r.locks_lost;
                continue;
            }
            const auto u = healthy_locks[i]->current()->valid_until;
            if (u != until[i]) {
                gap = std::max(gap, now - changed[i]);
                until[i] = u;
                changed[i] = now;
            }
        }
        std::this_thread::sleep_for(20ms);
    }
    for (std::size_t i = 0; i < n; ++i) gap = std::max(gap, clock_type::now() - changed[i]);
    r.extension_gap_max = std::chrono::duration_cast<std::chrono::milliseconds>(gap);
    for (int i = 0; i < locks; ++i)
        if (healthy.command({"PTTL", "redcoord:lock:{iso-" + std::to_string(i) + "}"}).integer() <=
            0)
            ++r.keys_expired;
    r.slow_slots_run = slow_slots.load();
    r.tick_workers = rt->stats().tick_workers;
    r.callback_workers = rt->callbacks().threads();
    for (auto& l : healthy_locks) l->unlock();
    return r;
}

}  // namespace redcoord::scenario
