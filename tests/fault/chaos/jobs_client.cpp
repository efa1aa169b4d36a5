// One jobs client of a fault schedule, run in its own network namespace:
//   chaos_jobs_client producer|consumer NAME LOG SECONDS LEASE_MS URL
// Until SECONDS pass, a producer adds jobs whose ids and payloads name them (NAME-n); a
// consumer runs a job_worker (two threads, lease LEASE_MS) whose handler works a little and
// returns "<consumer>:<attempt>". Every add and every handler start goes to LOG as a history
// line (testing/history.hpp: `push`, `deliver`), flushed at once, so a client killed or paused
// at any point leaves a readable history. A run's `deliver` spans from the end of the thread's
// previous run (or the worker's start) to the handler's start: the claim that brought the job
// was sent somewhere in between, and a fault in that span (a pause with the claim's reply
// unread) may have let the job's lease lapse before it started. What the server records as done is read at the end
// by the schedule (jobs_schedule.cpp), not logged here: a worker cut off or paused past its
// lease finishes its handler, and its settlement must then be refused.
#include "chaos_common.hpp"

#include <redcoord/core/pool.hpp>
#include <redcoord/jobs/job_queue.hpp>
#include <redcoord/jobs/job_worker.hpp>
#include <redcoord/testing/history.hpp>

#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>

namespace h = redcoord::testing::history;
using namespace std::chrono;

namespace {

// The job queue every client of a run shares (chaos_jobs_schedule reads it by this name).
constexpr const char* queue_name = "chaos";

// The producer outpaces the workers (an add every 1-4 ms plus its round trip, about 350 a
// second, against six threads running a job per 20-40 ms, about 200 a second), so jobs wait at
// the end: a server that forgets them loses jobs, and the final read has something to find.
void produce(redcoord::job_queue& q, const std::string& name, chaos::history_log& log,
             steady_clock::time_point until) {
    chaos::numbered_writes(log, name, "push", until, milliseconds(1), milliseconds(4),
                           [&](const std::string& id) {
                               redcoord::job_options o;
                               o.id = id;
                               // Reruns under faults are the point; no job may go dead.
                               o.max_attempts = 1000;
                               o.backoff = redcoord::backoff_policy::fixed(milliseconds(0));
                               (void)q.add(id, o);
                           });
}

void work(redcoord::job_queue& q, const std::string& name, chaos::history_log& log,
          milliseconds lease, steady_clock::time_point until) {
    redcoord::job_worker_options o;
    o.threads = 2;
    o.lease = lease;
    o.poll_timeout = milliseconds(100);
    o.retry_delay = milliseconds(20);
    const std::int64_t started = h::monotonic_ns();
    redcoord::job_worker w(
        q,
        [&](redcoord::job_context& j) {
            thread_local std::mt19937 rng(std::random_device{}());
            thread_local std::int64_t since = started;  // this thread's previous run's end
            const std::int64_t at = h::monotonic_ns();
            log.write({name, "deliver", since, at, true, 0, 0, j.id()});
            std::this_thread::sleep_for(
                milliseconds(std::uniform_int_distribution<int>(20, 40)(rng)));
            since = h::monotonic_ns();
            return name + ":" + std::to_string(j.attempt());
        },
        o);
    w.start();
    std::this_thread::sleep_until(until);
    w.stop();
    const auto st = w.stats();
    std::printf(
        "%s: %llu completed, %llu failed, %llu settlements refused, %llu errors\n", name.c_str(),
        static_cast<unsigned long long>(st.completed), static_cast<unsigned long long>(st.failed),
        static_cast<unsigned long long>(st.lost), static_cast<unsigned long long>(st.errors));
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 7) {
        std::fprintf(stderr, "usage: %s producer|consumer NAME LOG SECONDS LEASE_MS URL\n",
                     argv[0]);
        return 2;
    }
    const std::string role = argv[1], name = argv[2];
    chaos::history_log log(argv[3]);
    if (!log.open()) return 2;
    const auto until = steady_clock::now() + seconds(std::stoi(argv[4]));
    redcoord::connection_pool pool(chaos::quick_endpoint(argv[6]));
    redcoord::job_queue q(pool, queue_name);
    if (role == "producer")
        produce(q, name, log, until);
    else
        work(q, name, log, milliseconds(std::stoll(argv[5])), until);
    return 0;
}
