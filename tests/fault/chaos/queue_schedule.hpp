#pragma once
// reliable_queue fault schedules (issue 17): one server host, a producer and three consumers
// (chaos_queue_client), each in its own network namespace; faults by a seeded schedule; at
// the end the queue's lists are drained through the host's control socket and the history is
// judged by history::check_queue(). Shared by the test (a short fixed set) and chaos_runner.

#include "chaos_common.hpp"

#include <chrono>
#include <string>
#include <vector>

namespace chaos {

struct queue_schedule {
    std::string id;      // short name, e.g. \"queue/killed\", the README's tables use
    std::string family;  // what it does, in reports
    unsigned seed = 1;
    int seconds = 8;
    bool partitions_and_pauses = false;  // consumers cut from the server or paused past their lease
    bool kills = false;                  // consumers SIGKILLed at random, restarted under new names
    bool restarts = false;               // the server SIGKILLed and restarted at once
    bool persistence = true;  // AOF with appendfsync always (restarts keep what was acknowledged)
    bool broken_on_purpose = false;
};

struct queue_outcome : outcome_base {
    std::size_t kills = 0, pushed = 0, delivered = 0, acked = 0, left = 0;
    [[nodiscard]] std::string summary() const;  // one line of counts
    [[nodiscard]] std::size_t operations() const { return pushed + delivered + acked; }
};

// The consumers' visibility timeout (their lease); pauses and cuts outlast it.
inline constexpr std::chrono::milliseconds queue_lease{500};

queue_outcome run(const queue_schedule& s, const std::string& client_path);

// Safe families by seed: consumers cut off and paused past their lease; consumers SIGKILLed;
// server restarts with AOF (appendfsync always).
queue_schedule safe_queue_schedule(unsigned seed, int seconds);

// The demonstration: server restarts without persistence, at once (acknowledged pushes lost).
queue_schedule queue_demonstration(unsigned seed, int seconds);

}  // namespace chaos
