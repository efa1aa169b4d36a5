#pragma once
// Election fault schedules (issue 17): one election server, a resource host with an epoch
// fence, three chaos_election_client candidates, each in its own network namespace; faults by
// a seeded schedule; the histories judged by history::check_election().

#include "chaos_common.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace chaos {

struct election_schedule {
    std::string id;      // short name, e.g. "lock/minority", the README's tables use
    std::string family;  // what it does, in reports
    unsigned seed = 1;
    int seconds = 8;
    bool partitions_and_pauses = false;  // a candidate cut from the server, or paused past its term
    bool at_leader = false;  // those faults hit the current leader, not a random candidate
    // SIGKILL the election server every 0.7-1.5 s and restart it after this long, the leader
    // paused for 200 ms around it.
    std::optional<std::chrono::milliseconds> restart_after;
    bool appendonly = false;  // the server persists with AOF, `appendfsync always`
    // A master with a replica behind three sentinels instead of one server, failed over by
    // sentinel_failovers(); the candidates wait for `replicas` acknowledgements (WAIT).
    bool sentinel = false;
    std::size_t replicas = 0;
    bool client_clock_jumps = false;  // the candidates' wall clocks jump by hours
    bool broken_on_purpose = false;
    // The checker must find a violation in every run (a demonstration); false for breaks whose
    // effect needs an unlucky interleaving: those are reported, not required.
    bool must_catch = true;
};

struct election_outcome : outcome_base {
    std::size_t terms = 0, accepted = 0, rejected = 0;
    [[nodiscard]] std::string summary() const;  // one line of counts
};

// The term every candidate campaigns with.
inline constexpr std::chrono::milliseconds chaos_term{600};

election_outcome run(const election_schedule& s, const std::string& client_path);

// The safe families: the README promises no violation under them.
enum class election_family {
    candidates_cut_or_paused,  // a random candidate cut from the server or paused past the term
    leader_cut_or_paused,      // the same faults aimed at the current leader
    delayed_restarts,          // server restarts without persistence, delayed by a term
    aof_restarts,              // server restarts at once with AOF `appendfsync always`
    sentinel_failovers,        // Sentinel fails the master over (killed, or cut from the
                               // sentinels); candidates wait for both replicas
    client_clock_jumps,        // the candidates' wall clocks jump an hour to a day, either way
};
inline constexpr unsigned election_families = 6;

election_schedule safe_election_schedule(election_family family, unsigned seed, int seconds);
// The family chosen by `seed` (seed % election_families), for the long runs.
election_schedule safe_election_schedule(unsigned seed, int seconds);

// The demonstration: server restarts without persistence, at once (a new leader while the old
// one's term still runs).
election_schedule election_demonstration(unsigned seed, int seconds);

// Sentinel failovers with candidates that do not wait for the replica (`replicas = 0`): a
// leadership granted but not yet replicated can be granted again by the promoted replica.
// Needs an unlucky interleaving, so it is reported, not required.
election_schedule election_unreplicated_failovers(unsigned seed, int seconds);

}  // namespace chaos
