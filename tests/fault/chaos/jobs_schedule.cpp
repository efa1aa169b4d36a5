#include "jobs_schedule.hpp"

#include <redcoord/core/pool.hpp>
#include <redcoord/jobs/job_queue.hpp>

#include <set>

namespace chaos {

namespace history = redcoord::testing::history;

namespace {

// Each job of the run as the server holds it at the end (through the host's control socket):
// completed ones as `ack` events, waiting, delayed and active ones as `left`, and the jobs
// part's own rules (history::check_job_results()).
work_end read_jobs(redcoord::testing::local_server& server, const std::vector<history::event>& h) {
    std::set<std::string> added;  // every add, acknowledged or not: a lost reply may have landed
    for (const auto& e : h)
        if (e.op == "push") added.insert(e.id);
    redcoord::connection_pool pool(server.endpoint());
    redcoord::job_queue q(pool, "chaos");
    work_end out;
    std::vector<history::job_end_state> jobs;
    const auto now = history::monotonic_ns();
    for (const auto& id : added) {
        const auto j = q.get(id);
        if (!j) continue;  // never landed (check_queue judges acknowledged adds)
        const std::string state(to_string(j->state));
        jobs.push_back({id, state, j->attempts, j->result.value_or(""), j->error});
        if (state == "completed")
            out.events.push_back({"server", "ack", now, now, true, 0, 0, id});
        else if (state != "failed" && state != "dead")
            out.events.push_back({"server", "left", now, now, true, 0, 0, id});
    }
    out.violations = history::check_job_results(jobs);
    return out;
}

}  // namespace

queue_outcome run_jobs(const queue_schedule& s, const std::string& client_path) {
    return run_work(s, "jobs", client_path, read_jobs);
}

queue_schedule safe_jobs_schedule(unsigned seed, int seconds) {
    return safe_work_schedule("jobs", seed, seconds);
}

queue_schedule jobs_demonstration(unsigned seed, int seconds) {
    return work_demonstration("jobs", seed, seconds);
}

}  // namespace chaos
