// One jobs client of a fault schedule, run in its own network namespace:
//   chaos_jobs_client producer|consumer NAME LOG SECONDS LEASE_MS URL
//                     [flows|flows-early|groups|groups-over]
// With `flows` (the jobs/flows family) the producer adds flows instead of single jobs: a parent
// NAME-n and its children NAME-n.0, NAME-n.1 in one add_flow(), each id logged as a `push`;
// a consumer logs, besides `deliver`, a `ran` event per handler run ([start, return], token =
// the attempt) and, for a parent, a `parent` event whose token is the number of dependency
// results it saw. `flows-early` is the broken variant the checker must catch: a child's
// handler first runs a script that releases its waiting parents at once, as a settle script
// that released them at the child's claim would.
// With `groups` (the jobs/groups family) the producer sets the limits of three groups of very
// different sizes (groups_of_chaos) and adds jobs to them; a consumer logs per run a `gstart`
// (span: its thread's previous run's end to the handler's start) and a `gran` (the handler's
// start to its return), both with token = the attempt and seq = group index * 100 + limit.
// `groups-over` is the broken variant the checker must catch: a handler first runs a script
// that zeroes its group's active count, as a settle script that lost count would.
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
#include <redcoord/core/script.hpp>
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

redcoord::job_options rerun_options(const std::string& id);

// The producer outpaces the workers (an add every 1-4 ms plus its round trip, about 350 a
// second, against six threads running a job per 20-40 ms, about 200 a second), so jobs wait at
// the end: a server that forgets them loses jobs, and the final read has something to find.
void produce(redcoord::job_queue& q, const std::string& name, chaos::history_log& log,
             steady_clock::time_point until) {
    chaos::numbered_writes(log, name, "push", until, milliseconds(1), milliseconds(4),
                           [&](const std::string& id) {
                               // Reruns under faults are the point; no job may go dead.
                               (void)q.add(id, rerun_options(id));
                           });
}

redcoord::job_options rerun_options(const std::string& id) {
    redcoord::job_options o;
    o.id = id;
    o.max_attempts = 1000;
    o.backoff = redcoord::backoff_policy::fixed(milliseconds(0));
    return o;
}

// A flow per step, a little slower than single jobs: three jobs per add.
void produce_flows(redcoord::job_queue& q, const std::string& name, chaos::history_log& log,
                   steady_clock::time_point until) {
    std::mt19937 rng(std::random_device{}());
    for (std::uint64_t n = 1; steady_clock::now() < until; ++n) {
        const std::string id = name + "-" + std::to_string(n);
        redcoord::flow_job root{id, rerun_options(id), {}};
        for (int c = 0; c < 2; ++c) {
            const auto child = id + "." + std::to_string(c);
            root.children.push_back({child, rerun_options(child), {}});
        }
        const auto start = h::monotonic_ns();
        bool ok = false;
        try {
            (void)q.add_flow(root);
            ok = true;
        } catch (const std::exception&) {
            std::this_thread::sleep_for(milliseconds(20));  // the server is away
        }
        const auto end = h::monotonic_ns();
        for (const auto& c : root.children)
            log.write({name, "push", start, end, ok, 0, 0, c.payload});
        log.write({name, "push", start, end, ok, 0, 0, id});
        std::this_thread::sleep_for(milliseconds(std::uniform_int_distribution<int>(3, 8)(rng)));
    }
}

// The groups of the jobs/groups family, their limits, and which a job number goes to: five in
// eight to `big`, two to `mid`, one to `small` (jobs_schedule.cpp's checker reads seq).
struct chaos_group {
    const char* name;
    std::uint32_t limit;
};
constexpr chaos_group groups_of_chaos[] = {{"big", 2}, {"mid", 1}, {"small", 1}};
std::size_t group_of(std::uint64_t n) { return n % 8 < 5 ? 0 : n % 8 < 7 ? 1 : 2; }

void produce_groups(redcoord::job_queue& q, const std::string& name, chaos::history_log& log,
                    steady_clock::time_point until) {
    for (const auto& g : groups_of_chaos) {
        for (;;) {  // a fault may be scheduled from the start
            try {
                (void)q.set_group_limit(g.name, g.limit);
                break;
            } catch (const std::exception&) {
                if (steady_clock::now() >= until) return;
                std::this_thread::sleep_for(milliseconds(20));
            }
        }
    }
    std::uint64_t n = 0;
    chaos::numbered_writes(log, name, "push", until, milliseconds(1), milliseconds(4),
                           [&](const std::string& id) {
                               const auto& g = groups_of_chaos[group_of(++n)];
                               auto o = rerun_options(id);
                               o.group = g.name;
                               (void)q.add(g.name, o);
                           });
}

// The broken count of `groups-over`: the group's running jobs are forgotten.
void forget_group_count(redcoord::job_queue& q, const std::string& group) {
    static const redcoord::script over(R"(
redis.call('HSET', KEYS[1] .. ':gactive', ARGV[1], '0')
local base = KEYS[1]
if redis.call('EXISTS', base .. ':gw:' .. ARGV[1]) == 1 then
  redis.call('ZADD', base .. ':gready', 0, ARGV[1])
end
return 1)");
    (void)over.run(q.pool(), {"redcoord:jobs:{" + std::string(queue_name) + "}"}, {group});
}

// The broken release of `flows-early`: a child's waiting parents become ready at once.
void release_parents_early(redcoord::job_queue& q, const std::string& child) {
    static const redcoord::script early(R"(
local base = KEYS[1]
for _, p in ipairs(redis.call('SMEMBERS', base .. ':dependents:' .. ARGV[1])) do
  if redis.call('HGET', base .. ':job:' .. p, 'state') == 'waiting_children' then
    redis.call('ZADD', base .. ':waiting', 0, p)
    redis.call('HSET', base .. ':job:' .. p, 'state', 'waiting')
    redis.call('ZREM', base .. ':waiting_children', p)
  end
end
return 1)");
    (void)early.run(q.pool(), {"redcoord:jobs:{" + std::string(queue_name) + "}"}, {child});
}

void work(redcoord::job_queue& q, const std::string& name, chaos::history_log& log,
          milliseconds lease, steady_clock::time_point until, const std::string& mode) {
    redcoord::job_worker_options o;
    o.threads = 2;
    // One job per claim: the groups checker (jobs_schedule.cpp) bounds a run's slot by its
    // thread's previous run, which holds only without prefetch (fault_jobs runs prefetching
    // workers against its own checks).
    o.prefetch = 1;
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
            const bool grouped = mode.rfind("groups", 0) == 0;
            std::uint64_t group_tag = 0;
            if (grouped) {
                for (std::size_t g = 0; g < std::size(groups_of_chaos); ++g)
                    if (j.payload() == groups_of_chaos[g].name)
                        group_tag = g * 100 + groups_of_chaos[g].limit;
                log.write({name, "gstart", since, at, true, j.attempt(), group_tag, j.id()});
                if (mode == "groups-over") forget_group_count(q, j.payload());
            }
            const bool child = j.id().find('.') != std::string::npos;
            if (!mode.empty() && !grouped && !child)
                log.write({name, "parent", at, at, true, j.dependency_results().size(), 0, j.id()});
            if (mode == "flows-early" && child) release_parents_early(q, j.id());
            std::this_thread::sleep_for(
                milliseconds(std::uniform_int_distribution<int>(20, 40)(rng)));
            since = h::monotonic_ns();
            if (grouped)
                log.write({name, "gran", at, since, true, j.attempt(), group_tag, j.id()});
            else if (!mode.empty())
                log.write({name, "ran", at, since, true, j.attempt(), 0, j.id()});
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
    if (argc != 7 && argc != 8) {
        std::fprintf(stderr,
                     "usage: %s producer|consumer NAME LOG SECONDS LEASE_MS URL "
                     "[flows|flows-early|groups|groups-over]\n",
                     argv[0]);
        return 2;
    }
    const std::string role = argv[1], name = argv[2], mode = argc == 8 ? argv[7] : "";
    chaos::history_log log(argv[3]);
    if (!log.open()) return 2;
    const auto until = steady_clock::now() + seconds(std::stoi(argv[4]));
    redcoord::connection_pool pool(chaos::quick_endpoint(argv[6]));
    redcoord::job_queue q(pool, queue_name);
    if (role == "producer" && mode.rfind("groups", 0) == 0)
        produce_groups(q, name, log, until);
    else if (role == "producer" && !mode.empty())
        produce_flows(q, name, log, until);
    else if (role == "producer")
        produce(q, name, log, until);
    else
        work(q, name, log, milliseconds(std::stoll(argv[5])), until, mode);
    return 0;
}
