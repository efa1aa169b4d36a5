#pragma once
// Limiter fault schedules (issue 36): one server, chaos_limit_client processes each in its own
// network namespace; faults by a seeded schedule; the histories judged by
// history::check_semaphore(), check_rw_lock() and check_rate(). Shared by the test (a short
// fixed set) and chaos_runner (./scripts/chaos --part limit, the long runs).

#include "chaos_common.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace chaos {

// Which limiter the clients use.
enum class limiter {
    semaphore,  // `limit_permits` permits; each client asks for 1 or 2
    rw_lock,    // a third of the holds exclusive
    rate,       // rate_limiter (GCRA), `limit_rate` per second, burst `limit_burst`
};

struct limit_schedule {
    std::string id;      // short name, e.g. "semaphore/killed", the README's tables use
    std::string family;  // what it does, in reports
    unsigned seed = 1;
    int seconds = 6;
    limiter kind = limiter::semaphore;
    std::string mode;  // the clients' CHAOS_MODE ("", "long", "overrun", "fixed-window")
    bool partitions_and_pauses = false;  // a client cut from the server, or paused past its TTL
    bool kills = false;                  // SIGKILL a random client, start a new one in its place
    // After each kill, the killed client's leases are deleted on the server: a semaphore that
    // releases a dead holder's permits before their TTL (a demonstration).
    bool forget_killed_leases = false;
    bool clock_skew = false;  // clients' wall clocks ±1 h, jumping by an hour to a day
    bool broken_on_purpose = false;
    bool must_catch = true;  // demonstrations: the checker must catch every run
};

struct limit_outcome : outcome_base {
    std::size_t holds = 0, allowed = 0, refused = 0, kills = 0;
    [[nodiscard]] std::string summary() const;  // one line of counts
};

// The semaphore's N, the leases' TTL and the rate limiter's rate and burst in every schedule.
inline constexpr std::uint64_t limit_permits = 2;
inline constexpr std::chrono::milliseconds limit_ttl{300};
inline constexpr double limit_rate = 20;
inline constexpr std::uint64_t limit_burst = 5;

limit_outcome run(const limit_schedule& s, const std::string& client_path);

// The safe families: the docs promise no violation under them.
enum class limit_family {
    semaphore_cut_or_paused,  // holders cut from the server or paused past their TTL
    semaphore_killed,         // holders SIGKILLed: their permits come back after the TTL only
    rw_lock_cut_or_paused,    // readers and writers cut off or paused past their TTL
    rate_clock_skew,          // the clients' wall clocks ±1 h and jumping: nothing changes
};
inline constexpr unsigned limit_families = 4;

limit_schedule safe_limit_schedule(limit_family family, unsigned seed, int seconds);
// The family chosen by `seed` (seed % limit_families), for the long runs.
limit_schedule safe_limit_schedule(unsigned seed, int seconds);

// One demonstration per family, in limit_family's order: semaphore holders outliving their
// validity; a semaphore releasing killed holders' permits at once; rw_lock holders outliving their
// validity; a fixed-window counter on the clients' skewed clocks.
std::vector<limit_schedule> limit_demonstrations(unsigned seed, int seconds);

}  // namespace chaos
