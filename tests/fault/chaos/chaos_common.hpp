#pragma once
// What the fault schedules of every part share: their outcome's common half, a scratch
// directory per run, and the clients' short-deadline endpoints and history log.

#include <redcoord/core/endpoint.hpp>
#include <redcoord/testing/history.hpp>
#include <redcoord/testing/local_network.hpp>
#include <redcoord/testing/process.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace chaos {

// Faults a run applied, whether its clients finished, and what the checker found.
struct outcome_base {
    std::size_t partitions = 0, pauses = 0, restarts = 0, failovers = 0;
    bool clients_finished = true;
    std::vector<redcoord::testing::history::violation> violations;
    [[nodiscard]] bool broke(const std::string& rule) const;
    [[nodiscard]] std::string report() const;  // one line per violation
    // "N partitions, N pauses, N restarts", and ", N failovers" when there were some
    [[nodiscard]] std::string faults() const;
};

// A directory for one run's history and client output, removed with the object.
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

// A client's endpoint: connects within 200 ms and waits 300 ms for a reply, so a cut link
// costs a client little time and the schedule's faults stay visible in its history.
[[nodiscard]] redcoord::endpoint quick_endpoint(const std::string& url);

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

}  // namespace chaos
