#include "jobs_schedule.hpp"

#include <redcoord/core/pool.hpp>
#include <redcoord/jobs/job_queue.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace chaos {

namespace history = redcoord::testing::history;

namespace {

// Each job of the run as the server holds it at the end (through the host's control socket):
// completed ones as `ack` events, waiting, delayed and active ones as `left`, and the jobs
// part's own rules (history::check_job_results()).
work_end read_jobs(redcoord::testing::local_server& server, const std::vector<history::event>& h,
                   const std::string& mode) {
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
    if (!mode.empty()) {
        auto v = mode.rfind("groups", 0) == 0 ? check_groups(h, queue_lease) : check_flows(h, jobs);
        out.violations.insert(out.violations.end(), v.begin(), v.end());
    }
    return out;
}

}  // namespace

queue_outcome run_jobs(const queue_schedule& s, const std::string& client_path) {
    const std::string mode = s.client_args.empty() ? std::string() : s.client_args.front();
    return run_work(
        s, "jobs", client_path,
        [mode](redcoord::testing::local_server& server, const std::vector<history::event>& h) {
            return read_jobs(server, h, mode);
        });
}

std::vector<history::violation> check_groups(const std::vector<history::event>& h,
                                             std::chrono::milliseconds lease) {
    // A run holds its group's slot on the server from its claim to its settlement (or to its
    // lease's lapse, when it was cut off). Its claim was sent after its thread's previous run
    // ended (gstart's start: prefetch 1), so the server held the slot at least until then
    // plus the lease, and from before the handler started until after it returned: the span
    // [handler start, min(return, previous end + lease)] lies within the server's slot, and a
    // killed run (no return) within [handler start, previous end + lease]. More such spans of
    // one group at one instant than its limit: the server let the group run past its limit.
    using key = std::tuple<std::string, std::string, std::uint64_t>;
    std::map<key, std::int64_t> returned;
    for (const auto& e : h)
        if (e.op == "gran") returned[{e.client, e.id, e.token}] = e.end_ns;
    const auto lease_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(lease).count();
    struct edge {
        std::int64_t at;
        int delta;  // ends (-1) sort before starts (+1) at the same instant
        std::string what;
        bool operator<(const edge& o) const {
            return std::tie(at, delta) < std::tie(o.at, o.delta);
        }
    };
    std::map<std::uint64_t, std::vector<edge>> per_group;  // by seq: group * 100 + limit
    for (const auto& e : h) {
        if (e.op != "gstart") continue;
        auto end = e.start_ns + lease_ns;
        if (const auto r = returned.find({e.client, e.id, e.token}); r != returned.end())
            end = std::min(end, r->second);
        if (end <= e.end_ns) continue;  // its lease may have lapsed before it started
        const auto what = e.client + " ran " + e.id + " (attempt " + std::to_string(e.token) + ")";
        per_group[e.seq].push_back({e.end_ns, +1, what});
        per_group[e.seq].push_back({end, -1, what});
    }
    std::vector<history::violation> out;
    for (auto& [tag, edges] : per_group) {
        const auto limit = static_cast<int>(tag % 100);
        std::sort(edges.begin(), edges.end());
        int running = 0;
        std::set<std::string> now;
        for (const auto& e : edges) {
            running += e.delta;
            if (e.delta < 0) {
                now.erase(e.what);
                continue;
            }
            now.insert(e.what);
            if (running > limit && out.size() < 20) {
                std::string who;
                for (const auto& w : now) who += (who.empty() ? "" : "; ") + w;
                out.push_back({"group limit", "group " + std::to_string(tag / 100) + " (limit " +
                                                  std::to_string(limit) + ") ran " +
                                                  std::to_string(running) + " at once: " + who});
            }
        }
    }
    return out;
}

std::vector<history::violation> check_flows(const std::vector<history::event>& h,
                                            const std::vector<history::job_end_state>& jobs) {
    std::map<std::string, const history::job_end_state*> end;
    for (const auto& j : jobs) end[j.id] = &j;
    // The return of each run, by (client, job, attempt): a completed job's result names the run
    // that completed it, whose return came before its completion was written, which came
    // before its parents were released.
    std::map<std::tuple<std::string, std::string, std::uint64_t>, std::int64_t> returned;
    std::map<std::string, std::vector<std::string>> children;
    for (const auto& e : h) {
        if (e.op == "ran") returned[{e.client, e.id, e.token}] = e.end_ns;
        if (e.op == "push" && e.id.find('.') != std::string::npos)
            children[e.id.substr(0, e.id.find('.'))].push_back(e.id);
    }
    const auto completed_at = [&](const std::string& child) -> std::optional<std::int64_t> {
        const auto it = end.find(child);
        if (it == end.end() || it->second->state != "completed") return std::nullopt;
        const auto& r = it->second->result;
        const auto colon = r.rfind(':');
        if (colon == std::string::npos) return std::nullopt;
        const auto run =
            returned.find({r.substr(0, colon), child, std::stoull(r.substr(colon + 1))});
        if (run == returned.end()) return std::nullopt;
        return run->second;
    };
    std::vector<history::violation> out;
    for (const auto& e : h) {
        if (e.op == "deliver" && children.count(e.id)) {
            for (const auto& c : children[e.id]) {
                const auto done = completed_at(c);
                if (!done)
                    out.push_back({"parent after its children", e.client + " started parent " +
                                                                    e.id + " but child " + c +
                                                                    " never completed"});
                else if (e.end_ns < *done)
                    out.push_back({"parent after its children",
                                   e.client + " started parent " + e.id + " at " +
                                       std::to_string(e.end_ns) +
                                       " ns, before the run that "
                                       "completed child " +
                                       c + " returned at " + std::to_string(*done) + " ns"});
            }
        }
        if (e.op == "parent" && children.count(e.id) && e.token < children[e.id].size())
            out.push_back({"parent sees its children's results",
                           e.client + " ran parent " + e.id + " with " + std::to_string(e.token) +
                               " of " + std::to_string(children[e.id].size()) + " results"});
    }
    for (const auto& [parent, kids] : children) {
        const auto it = end.find(parent);
        if (it == end.end() || it->second->state != "waiting_children") continue;
        bool all = true;
        for (const auto& c : kids) all = all && end.count(c) && end[c]->state == "completed";
        if (all)
            out.push_back({"nothing lost",
                           "parent " + parent + " still waits though its children completed"});
    }
    return out;
}

namespace {

// A family whose clients run in `mode` (jobs_client.cpp); safe ones with workers killed, cut
// off and paused past their lease, broken ones (demonstrations) without faults.
queue_schedule mode_schedule(const char* id, const char* family, const char* mode, bool broken,
                             unsigned seed, int seconds) {
    queue_schedule s;
    s.id = id;
    s.family = family;
    s.seed = seed;
    s.seconds = seconds;
    s.kills = !broken;
    s.partitions_and_pauses = !broken;
    s.client_args = {mode};
    s.broken_on_purpose = broken;
    return s;
}

}  // namespace

queue_schedule flows_schedule(unsigned seed, int seconds) {
    return mode_schedule("jobs/flows",
                         "flows while workers are killed, cut off and paused past their lease",
                         "flows", false, seed, seconds);
}

queue_schedule flows_demonstration(unsigned seed, int seconds) {
    return mode_schedule("jobs/flows-early",
                         "flows with parents released when a child starts (broken on purpose)",
                         "flows-early", true, seed, seconds);
}

queue_schedule groups_schedule(unsigned seed, int seconds) {
    return mode_schedule(
        "jobs/groups",
        "groups with limits while workers are killed, cut off and paused past their lease",
        "groups", false, seed, seconds);
}

queue_schedule groups_demonstration(unsigned seed, int seconds) {
    return mode_schedule("jobs/groups-over",
                         "groups whose active count is zeroed at each start (broken on purpose)",
                         "groups-over", true, seed, seconds);
}

queue_schedule safe_jobs_schedule(unsigned seed, int seconds) {
    return safe_work_schedule("jobs", seed, seconds);
}

queue_schedule jobs_demonstration(unsigned seed, int seconds) {
    return work_demonstration("jobs", seed, seconds);
}

}  // namespace chaos
