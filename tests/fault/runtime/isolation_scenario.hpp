#pragma once
// The isolation scenario of the runtime issue (issue 35), shared by its test (a short run)
// and bench_runtime (the 30 s run that prints isolation_extension_gap_max_ms): one runtime;
// three paused (SIGSTOP) servers, each used by one object (a reliable_queue consumer holding
// a message, a job worker running a job, an elector with replicas = 1); two locks lost at once
// whose on_lost slots take 5 s each; and N watchdog locks with a 1 s ttl on a healthy server.

#include <chrono>
#include <cstddef>

namespace redcoord::scenario {

/// What one run of the isolation scenario saw.
struct isolation_result {
    /// Largest time between two observed extensions of any healthy lock (sampled every 20 ms).
    std::chrono::milliseconds extension_gap_max{0};
    int locks_lost = 0;                ///< Healthy locks whose holder saw them lost.
    int keys_expired = 0;              ///< Healthy locks whose key was gone from Redis at the end.
    int slow_slots_run = 0;            ///< The slow on_lost slots that started (2 expected).
    std::size_t tick_workers = 0;      ///< The runtime's tick workers at the end of the run.
    std::size_t callback_workers = 0;  ///< Its callback workers at the end of the run.
};

/// Runs the scenario for `run_for` with `locks` healthy watchdog locks, on servers it starts
/// itself. Stops early once a healthy lock is lost. @throws std::runtime_error when the setup
/// fails (a server does not start, a lock is not taken, the job does not start).
isolation_result run_isolation(std::chrono::milliseconds run_for, int locks);

}  // namespace redcoord::scenario
