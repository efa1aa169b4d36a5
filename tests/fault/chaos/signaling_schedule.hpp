#pragma once
// signal_hub and barrier fault schedules (issue 17): a master and its replica on two hosts, a
// publisher and three members (chaos_signaling_client: a waiter listening over both links and
// a barrier party), each in its own network namespace; faults by a seeded schedule; the
// history judged by history::check_signaling(). Shared by the test and chaos_runner.

#include "chaos_common.hpp"

#include <chrono>
#include <string>
#include <vector>

namespace chaos {

struct signaling_schedule {
    std::string id;      // short name, e.g. \"queue/killed\", the README's tables use
    std::string family;  // what it does, in reports
    unsigned seed = 1;
    int seconds = 8;
    // Members cut from the master or from the replica (one link at a time), or paused.
    bool partitions_and_pauses = false;
    bool restarts = false;    // the master SIGKILLed and restarted at once (AOF, fsync always)
    std::string mode;         // the clients' CHAOS_MODE ("" or "plain")
    std::size_t parties = 3;  // the barrier's party count in the clients (there are 3 members)
    bool broken_on_purpose = false;
    // The checker must find a violation in every run; not for breaks whose effect needs an
    // unlucky interleaving (reported by chaos_runner, not required).
    bool must_catch = true;
};

struct signaling_outcome : outcome_base {
    std::size_t signals = 0, receipts = 0, passes = 0;
    // Signal x member pairs the checker held to "received", being published inside one of the
    // member's link-up intervals: what the run really tested of delivery.
    std::size_t covered = 0;
    // Of those, pairs published while the member was cut from the master: only the replica
    // link could carry them.
    std::size_t via_replica = 0;
    [[nodiscard]] std::string summary() const;  // one line of counts
    [[nodiscard]] std::size_t operations() const { return signals + receipts + passes; }
};

signaling_outcome run(const signaling_schedule& s, const std::string& client_path);

// Safe families by seed: members cut from one link or paused; master restarts with AOF.
signaling_schedule safe_signaling_schedule(unsigned seed, int seconds);

// The demonstrations: signals published without the hub's envelope (no de-duplication across
// master and replica links); a barrier whose clients count fewer parties than take part.
std::vector<signaling_schedule> signaling_demonstrations(unsigned seed, int seconds);

}  // namespace chaos
