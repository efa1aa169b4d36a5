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
#include <random>
#include <string>
#include <vector>

namespace chaos {

// Faults a run applied, whether its clients finished, and what the checker found.
struct outcome_base {
    std::size_t partitions = 0, pauses = 0, restarts = 0;
    bool clients_finished = true;
    std::vector<redcoord::testing::history::violation> violations;
    [[nodiscard]] bool broke(const std::string& rule) const;
    [[nodiscard]] std::string report() const;  // one line per violation
    [[nodiscard]] std::string faults() const;  // "N partitions, N pauses, N restarts"
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

// Until `end`, one fault at a time: a random client of `clients` (node indices, matching
// `procs`) cut from a random node of `targets`, healed after; or that client paused
// (SIGSTOP), resumed after. Counts them in `out`.
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
