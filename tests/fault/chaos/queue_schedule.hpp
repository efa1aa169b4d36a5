#pragma once
// Work-queue fault schedules (issue 17): one server host, a producer and three consumers, each
// in its own network namespace; faults by a seeded schedule; at the end the server's state is
// read through the host's control socket and the history is judged by history::check_queue().
// The reliable_queue's (chaos_queue_client) are here; the jobs part (jobs_schedule.hpp) runs
// its client through the same run_work(). Shared by the tests (a short fixed set) and
// chaos_runner.

#include "chaos_common.hpp"

#include <redcoord/testing/history.hpp>
#include <redcoord/testing/local_server.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace chaos {

struct queue_schedule {
    std::string id;      // short name, e.g. "queue/killed", the README's tables use
    std::string family;  // what it does, in reports
    unsigned seed = 1;
    int seconds = 8;
    bool partitions_and_pauses = false;  // consumers cut from the server or paused past their lease
    bool kills = false;                  // consumers SIGKILLed at random, restarted under new names
    bool restarts = false;               // the server SIGKILLed and restarted at once
    bool persistence = true;  // AOF with appendfsync always (restarts keep what was acknowledged)
    bool broken_on_purpose = false;
    // Appended to every client's arguments (the jobs client's mode: `flows`, `flows-early`).
    std::vector<std::string> client_args;
};

struct queue_outcome : outcome_base {
    std::size_t kills = 0, pushed = 0, delivered = 0, acked = 0, left = 0;
    std::size_t parents_run = 0;  // jobs/flows: parent runs (the clients' `parent` events)
    std::size_t group_runs = 0;   // jobs/groups: grouped runs (the clients' `gstart` events)
    [[nodiscard]] std::string summary() const;  // one line of counts
    [[nodiscard]] std::size_t operations() const { return pushed + delivered + acked; }
};

// The consumers' visibility timeout (their lease); pauses and cuts outlast it.
inline constexpr std::chrono::milliseconds queue_lease{500};

queue_outcome run(const queue_schedule& s, const std::string& client_path);

// What the server holds at the end, as the checker reads it: `left` events for what waits,
// `ack` events for what the server records as done, and violations of the part's own rules.
struct work_end {
    std::vector<redcoord::testing::history::event> events;
    std::vector<redcoord::testing::history::violation> violations;
};
using end_state_reader =
    std::function<work_end(redcoord::testing::local_server& server,
                           const std::vector<redcoord::testing::history::event>& history)>;

// Runs `s` for `part` ("queue", "jobs"): a producer and three consumers of `client_path`, each
// started as `CLIENT producer|consumer NAME LOG SECONDS LEASE_MS URL`, under the schedule's
// faults; then `end_state` reads the server and check_queue() judges the whole history.
queue_outcome run_work(const queue_schedule& s, const std::string& part,
                       const std::string& client_path, const end_state_reader& end_state);

// The safe families of `part`, by seed (`part`/cut-or-paused, /killed, /aof-restart).
queue_schedule safe_work_schedule(const std::string& part, unsigned seed, int seconds);
// `part`/restart-at-once: server restarts without persistence, at once.
queue_schedule work_demonstration(const std::string& part, unsigned seed, int seconds);

// Safe families by seed: consumers cut off and paused past their lease; consumers SIGKILLed;
// server restarts with AOF (appendfsync always).
queue_schedule safe_queue_schedule(unsigned seed, int seconds);

// The demonstration: server restarts without persistence, at once (acknowledged pushes lost).
queue_schedule queue_demonstration(unsigned seed, int seconds);

}  // namespace chaos
