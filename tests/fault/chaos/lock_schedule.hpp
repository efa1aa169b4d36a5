#pragma once
// Redlock fault schedules (issue 17): three masters, a resource host that applies the fencing
// check, three chaos_lock_client processes, each in its own network namespace; faults by a
// seeded schedule; the clients' histories judged by history::check_lock(). Shared by the
// test (a short fixed set) and chaos_runner (./scripts/chaos, the long runs).

#include "chaos_common.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace chaos {

// What one run does.
struct lock_schedule {
    std::string id;      // short name, e.g. "lock/minority", the README's tables use
    std::string family;  // what it does, in reports
    unsigned seed = 1;   // the faults' random choices
    std::string mode;    // the clients' CHAOS_MODE ("", "long", "overrun", "unfenced")
    int seconds = 8;     // how long the clients run
    std::vector<double> rates{1, 1, 1};    // each master's clock rate (libfaketime); 1: real
    bool partitions_and_pauses = false;    // partitions and holders paused past the TTL
    std::vector<cut> cuts{cut::minority};  // the partitions' shapes (chaos_common.hpp)
    // SIGKILL a random master every 100-300 ms and restart it after this long.
    std::optional<std::chrono::milliseconds> restart_after;
    bool appendonly = false;  // the masters persist with AOF, `appendfsync always`
    // distributed_lock on a master with a replica behind three sentinels, failed over by
    // sentinel_failovers(), instead of Redlock; its acquisitions wait for `replicas` (WAIT).
    bool sentinel = false;
    std::size_t replicas = 0;
    bool client_clock_jumps = false;  // the clients' wall clocks jump by hours (wall_clock_jumps)
    // fair_lock (FIFO waiters with leases) on the first master alone, instead of Redlock.
    bool fair = false;
    bool broken_on_purpose = false;  // a demonstration of a broken assumption
    // The checker must find a violation in every run. Not for breaks whose effect needs an
    // unlucky interleaving (one fast master of three): those are reported, not required.
    bool must_catch = false;
};

struct lock_outcome : outcome_base {
    std::size_t holds = 0, accepted = 0, rejected = 0;
    [[nodiscard]] std::string summary() const;  // one line of counts
};

// Runs `s` with the chaos_lock_client at `client_path`. Needs root (local_network).
lock_outcome run(const lock_schedule& s, const std::string& client_path);

// The safe families: the README promises no violation under them.
enum class lock_family {
    minority_partitions,  // one client cut from one master; holders paused past the TTL
    majority_partitions,  // a client cut from two masters of three, or two clients split
                          // across different majorities; pauses as above
    skew_within_drift,    // every master's clock 0.5% fast
    delayed_restarts,     // restarts without persistence, delayed by a TTL
    aof_restarts,         // restarts at once of masters with AOF `appendfsync always`
    sentinel_failovers,   // distributed_lock waiting for every replica, Sentinel failovers
    client_clock_jumps,   // the clients' wall clocks jump an hour to a day, either way
    fair_partitions,      // fair_lock on one master (AOF): holders and queued waiters cut
                          // from it or paused past the TTL and past their waiter lease
};
inline constexpr unsigned lock_families = 8;

// One safe family's schedule.
lock_schedule safe_schedule(lock_family family, unsigned seed, int seconds);
// The family chosen by `seed` (seed % lock_families), for the long runs.
lock_schedule safe_schedule(unsigned seed, int seconds);

// The demonstrations, where a documented assumption is broken on purpose.
std::vector<lock_schedule> demonstrations(unsigned seed, int seconds);

// distributed_lock under Sentinel failovers without WAIT (`replicas = 0`): the failover race
// of the Redlock page (a grant not yet replicated is lost with the master). Needs that
// interleaving, so it is reported, not required.
lock_schedule unreplicated_failovers(unsigned seed, int seconds);

}  // namespace chaos
