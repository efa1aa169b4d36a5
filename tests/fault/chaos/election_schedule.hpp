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
    std::string family;
    unsigned seed = 1;
    int seconds = 8;
    bool partitions_and_pauses = false;  // a candidate cut from the server, or paused past its term
    // SIGKILL the election server every 0.7-1.5 s and restart it (no persistence) after this
    // long, the leader paused for 200 ms around it.
    std::optional<std::chrono::milliseconds> restart_after;
    bool broken_on_purpose = false;
};

struct election_outcome : outcome_base {
    std::size_t terms = 0, accepted = 0, rejected = 0;
    [[nodiscard]] std::string summary() const;  // one line of counts
};

// The term every candidate campaigns with.
inline constexpr std::chrono::milliseconds chaos_term{600};

election_outcome run(const election_schedule& s, const std::string& client_path);

// Safe families by seed: partitions and pauses; server restarts delayed by a term.
election_schedule safe_election_schedule(unsigned seed, int seconds);

// The demonstration: server restarts without persistence, at once (a new leader while the old
// one's term still runs).
election_schedule election_demonstration(unsigned seed, int seconds);

}  // namespace chaos
