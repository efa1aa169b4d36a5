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
    std::string family;  // its name in reports
    unsigned seed = 1;   // the faults' random choices
    std::string mode;    // the clients' CHAOS_MODE ("", "long", "overrun", "unfenced")
    int seconds = 8;     // how long the clients run
    std::vector<double> rates{1, 1, 1};  // each master's clock rate (libfaketime); 1: real
    bool partitions_and_pauses = false;  // minority partitions and holders paused past the TTL
    // SIGKILL a random master every 100-300 ms and restart it (no persistence) after this long.
    std::optional<std::chrono::milliseconds> restart_after;
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

// The safe families (the README promises no violation under them), one chosen by `seed`:
// minority partitions and pauses; skew within the drift allowance; restarts delayed by a TTL.
lock_schedule safe_schedule(unsigned seed, int seconds);

// The demonstrations, where a documented assumption is broken on purpose.
std::vector<lock_schedule> demonstrations(unsigned seed, int seconds);

}  // namespace chaos
