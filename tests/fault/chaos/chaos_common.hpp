#pragma once
// What the fault schedules of every part share: their outcome's common half, a scratch
// directory per run, and the clients' short-deadline endpoints and history log.

#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/testing/history.hpp>
#include <redcoord/testing/local_network.hpp>
#include <redcoord/testing/process.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace chaos {

// Faults a run applied, whether its clients finished, and what the checker found.
struct outcome_base {
    std::size_t partitions = 0, pauses = 0, restarts = 0, failovers = 0, clock_jumps = 0;
    bool clients_finished = true;
    std::vector<redcoord::testing::history::violation> violations;
    [[nodiscard]] bool broke(const std::string& rule) const;
    [[nodiscard]] std::string report() const;  // one line per violation
    // "N partitions, N pauses, N restarts", and failovers and clock jumps when there were some
    [[nodiscard]] std::string faults() const;
};

// A directory for one run's history and client output, removed with the object (kept, and
// its path printed, when CHAOS_KEEP_RUNS is set: to read a failing run's logs).
class run_dir {
public:
    run_dir(const std::string& part, unsigned seed);
    ~run_dir();
    run_dir(const run_dir&) = delete;
    run_dir& operator=(const run_dir&) = delete;
    [[nodiscard]] std::string file(const std::string& name) const {
        return (path_ / name).string();
    }

private:
    std::filesystem::path path_;
};

// How often partition-and-pause faults come (one every `every_*` ms) and how long each lasts
// (`undo_*` ms).
struct fault_timing {
    int every_min = 300, every_max = 700, undo_min = 300, undo_max = 900;
};

// The shape of one partition, over a client and the `targets` (the Redlock masters, or the one
// election server):
// - minority: the client is cut from one target;
// - majority: the client is cut from all targets but one (it keeps only a minority, or none);
// - split: two clients are each cut from a different target, so each reaches a different
//   majority (they overlap in the rest, which is what Redlock's exclusion rests on).
enum class cut {
    minority,
    majority,
    split
};

// What the fault loop does and to whom.
struct fault_plan {
    fault_timing timing;
    std::vector<cut> cuts{cut::minority};  // each partition takes one of these at random
    bool pauses = true;                    // half the faults are pauses (SIGSTOP) instead
    // The client each fault hits (an index into `clients`); nullopt or unset: a random one. The
    // election aims at the current leader this way.
    std::function<std::optional<std::size_t>()> victim;
};

// One fault as partitions_and_pauses() makes them, for schedules that interleave faults of
// their own or must log who was hit and when: sleeps `timing.every_*`, then cuts a client (the
// plan's victim, or a random one of `clients`) as one of the plan's shapes, or pauses it, for
// `timing.undo_*`, and undoes it.
struct fault_window {
    std::size_t client = 0;  // index into `clients` (and `procs`)
    bool paused = false;     // SIGSTOP; else cut along `links`
    std::size_t target = 0;  // the node the client was cut from (the first link's far end)
    std::vector<redcoord::testing::local_network::link> links;  // every link cut
    std::chrono::steady_clock::time_point from, to;             // applied, undone
};
fault_window partition_or_pause(redcoord::testing::local_network& net,
                                std::vector<redcoord::testing::process>& procs,
                                const std::vector<std::size_t>& clients,
                                const std::vector<std::size_t>& targets, std::mt19937& rng,
                                const fault_plan& plan, outcome_base& out);
// The same with minority cuts and pauses of random clients.
fault_window partition_or_pause(redcoord::testing::local_network& net,
                                std::vector<redcoord::testing::process>& procs,
                                const std::vector<std::size_t>& clients,
                                const std::vector<std::size_t>& targets, std::mt19937& rng,
                                fault_timing timing, outcome_base& out);

// Until `end`, one fault at a time, undone after a while: a partition of the plan's shapes, or
// a client paused (SIGSTOP) and resumed. `clients` are node indices matching `procs`. Counts
// the faults in `out`.
void partitions_and_pauses(redcoord::testing::local_network& net,
                           std::vector<redcoord::testing::process>& procs,
                           const std::vector<std::size_t>& clients,
                           const std::vector<std::size_t>& targets, std::mt19937& rng,
                           std::chrono::steady_clock::time_point end, const fault_plan& plan,
                           outcome_base& out);

// The same with minority cuts and pauses of random clients.
void partitions_and_pauses(redcoord::testing::local_network& net,
                           std::vector<redcoord::testing::process>& procs,
                           const std::vector<std::size_t>& clients,
                           const std::vector<std::size_t>& targets, std::mt19937& rng,
                           std::chrono::steady_clock::time_point end, fault_timing timing,
                           outcome_base& out);

// Waits up to `wait` for every client to exit 0 (else out.clients_finished is false) and reads
// the run's history.
[[nodiscard]] std::vector<redcoord::testing::history::event> finish(
    std::vector<redcoord::testing::process>& procs, const run_dir& dir, std::chrono::seconds wait,
    outcome_base& out);

// Appends events the schedule made (faults, drains, link intervals) to the run's history
// log, so that a kept run's log (CHAOS_KEEP_RUNS) holds everything the checker read.
void record(const run_dir& dir, const std::vector<redcoord::testing::history::event>& events);

// The launcher of client `i` whose wall clock wall_clock_jumps() moves (its offset file lives in
// `dir`); its monotonic clock, which redcoord and the history use, stays true.
[[nodiscard]] std::vector<std::string> jumping_clock(const run_dir& dir, std::size_t i);

// Until `end`, every 200-500 ms the wall clock of one of `clients` clients (started with
// jumping_clock()) jumps to between one hour and one day away from the true time, forward or
// back. Counts the jumps in `out`.
void wall_clock_jumps(const run_dir& dir, std::size_t clients, std::mt19937& rng,
                      std::chrono::steady_clock::time_point end, outcome_base& out);

// How the resource host judges the token of a guarded write: locks' fencing tokens must rise
// above every token accepted before; leader work may repeat its term's epoch but never go
// below the newest; `none` accepts everything (the demonstration of a resource without the
// check).
enum class fence {
    above,
    at_least,
    none
};

// One guarded write of event `e` (its `token`) to the resource host, judged by `rule` in one
// script that also numbers the decision, so the checker knows the resource's order: sets
// `e.ok` and `e.seq`, or appends "-unknown" to `e.op` when the reply is lost (the decision is
// unknown, and the checkers do not judge it).
void guarded_write(redcoord::connection_pool& resource, fence rule,
                   redcoord::testing::history::event& e);

// A client's endpoint: connects within 200 ms and waits 300 ms for a reply, so a cut link
// costs a client little time and the schedule's faults stay visible in its history.
[[nodiscard]] redcoord::endpoint quick_endpoint(const std::string& url);

class history_log;

// A writer's loop until `until`: op(id) for ids NAME-1, NAME-2, ..., each logged as event `what`
// (ok when op returned; after a failure the server is away, so 20 ms pass before the next), then
// a random pause of pause_min..pause_max.
void numbered_writes(history_log& log, const std::string& name, const std::string& what,
                     std::chrono::steady_clock::time_point until,
                     std::chrono::milliseconds pause_min, std::chrono::milliseconds pause_max,
                     const std::function<void(const std::string& id)>& op);

// A steady_clock instant as history time (CLOCK_MONOTONIC nanoseconds: libstdc++'s steady_clock).
[[nodiscard]] std::int64_t history_ns(std::chrono::steady_clock::time_point t);

// A client's history log: one line per event, flushed at once, so a client killed or paused at
// any point leaves a readable history (several clients append to one file).
class history_log {
public:
    explicit history_log(const std::string& path);
    ~history_log();
    history_log(const history_log&) = delete;
    history_log& operator=(const history_log&) = delete;
    [[nodiscard]] bool open() const noexcept { return file_ != nullptr; }
    void write(const redcoord::testing::history::event& e);

private:
    std::FILE* file_;
};

// chaos_runner's loop over one part: `schedules` safe schedules, `make(seed)` for seeds from
// `seed` on, each run by `run_one` and printed on a line, then the part's summary (schedules,
// operations as `operations(outcome)` counts them, violations, failing seeds). False when a
// schedule broke a rule or left a client unfinished.
template <class Make, class Run, class Count>
bool run_part(const std::string& part, unsigned schedules, unsigned seed, Make make, Run run_one,
              Count operations) {
    struct tally {
        unsigned schedules = 0;
        std::size_t ops = 0, violations = 0;
    };
    std::map<std::string, tally> families;  // by id, for the per-family lines
    std::size_t ops = 0, violations = 0;
    std::string failed;
    for (unsigned i = 0; i < schedules; ++i) {
        const auto s = make(seed + i);
        const auto o = run_one(s);
        auto& f = families[s.id];
        ++f.schedules;
        f.ops += operations(o);
        f.violations += o.violations.size();
        ops += operations(o);
        violations += o.violations.size();
        std::printf("%s seed %u [%s: %s]: %s\n", part.c_str(), s.seed, s.id.c_str(),
                    s.family.c_str(), o.summary().c_str());
        if (!o.violations.empty() || !o.clients_finished) {
            failed += " " + std::to_string(s.seed);
            std::printf("%s", o.report().c_str());
        }
        std::fflush(stdout);
    }
    for (const auto& [id, f] : families)
        std::printf("family %s: %u schedules, %zu operations, %zu violations\n", id.c_str(),
                    f.schedules, f.ops, f.violations);
    std::printf("part %s: %u schedules, %zu operations, %zu violations, failing seeds:%s\n",
                part.c_str(), schedules, ops, violations,
                failed.empty() ? " none" : failed.c_str());
    return failed.empty();
}

// The demonstrations of a part, a line each. False when one the checker must catch (every one,
// unless its schedule's `must_catch` says otherwise) was not caught.
template <class Schedule, class Run>
bool run_demonstrations(const std::string& part, const std::vector<Schedule>& demos, Run run_one) {
    bool ok = true;
    for (const auto& s : demos) {
        const auto o = run_one(s);
        const bool caught = !o.violations.empty();
        bool must = true;
        if constexpr (requires { s.must_catch; }) must = s.must_catch;
        std::printf("%s demonstration [%s: %s] seed %u: %s (%s)\n", part.c_str(), s.id.c_str(),
                    s.family.c_str(), s.seed, o.summary().c_str(),
                    caught ? "caught"
                    : must ? "NOT caught"
                           : "not seen this run");
        ok &= caught || !must;
        std::fflush(stdout);
    }
    return ok;
}

}  // namespace chaos
