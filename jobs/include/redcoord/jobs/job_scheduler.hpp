#pragma once
/// @file
/// The one process that adds the ticks of a job_queue's repeatable jobs: the leader of an
/// election named after the queue, each tick written under its epoch (a fencing token).

#include <redcoord/core/export.hpp>
#include <redcoord/jobs/job_queue.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>

REDCOORD_API_BEGIN
namespace redcoord {

/// Options of a job_scheduler. Durations are milliseconds.
struct job_scheduler_options {
    /// The candidate's identity in the election (empty: a random one).
    std::string identity;
    /// The election's term (election_options::term): how long a crashed scheduler's leadership
    /// lasts before another takes over. > 0.
    std::chrono::milliseconds term{5000};
    /// How often the leader looks for due ticks (its ticks are at most this late, plus a
    /// round trip). > 0.
    std::chrono::milliseconds check_interval{25};
};

/// Adds the ticks of the queue's repeatable jobs (job_queue::repeat()).
///
/// Run one in every process that may schedule; exactly one of them works at a time: the
/// leader of the election named after the queue (leader_elector, with the queue's prefix, so
/// its keys share the queue's hash slot). Every check_interval the leader reads the repeats
/// and the server's time, computes the ticks due since each repeat's last one (the server's
/// clock; cron schedules in their zone) and adds them with one script per repeat that first
/// verifies the leader's identity and epoch against the election's own hash: a leader that
/// was paused past its term and replaced cannot add a tick. Each tick's job id is
/// `repeat:<name>:<tick ms>`, and the repeat's last tick moves in the same script, so a tick is
/// added once even when a leader dies between ticks; missed ticks follow the repeat's policy.
///
/// @par Thread safety
/// start()/stop() from one controlling thread; the rest from any thread.
///
/// @par Errors
/// The constructor throws invalid_argument for bad options; start() throws as
/// leader_elector::start() and leader_task's constructor. Failed passes are counted and retried.
///
/// @par Cost
/// The election's rounds (term / 3), and while leading one pass per check_interval: one round
/// trip to read the repeats, one per repeat with due ticks. No thread of its own: the passes
/// run on the leader_task's strand of the runtime's callback executor.
///
/// @par Metrics
/// `redcoord_jobs_ticks_total{name}` counts the ticks this scheduler added (with a metrics
/// backend on the runtime before construction); the election reports its own metrics.
class job_scheduler {
public:
    /// A scheduler for `queue` (which must outlive it). Not started.
    /// @throws invalid_argument for bad options.
    explicit job_scheduler(job_queue& queue, job_scheduler_options opts = {});
    /// stop().
    ~job_scheduler();
    job_scheduler(const job_scheduler&) = delete;
    job_scheduler& operator=(const job_scheduler&) = delete;

    /// Joins the election and starts the leader task. No-op when running.
    void start();
    /// Leaves the election (resigning a leadership) and stops. Never throws.
    void stop() noexcept;
    /// True while this scheduler leads.
    [[nodiscard]] bool is_leader() const noexcept;
    /// Ticks this scheduler added.
    [[nodiscard]] std::uint64_t ticks_added() const noexcept;
    /// Passes that failed (server unreachable, or fenced off).
    [[nodiscard]] std::uint64_t errors() const noexcept;
    /// The latest failure of a pass, or else the election's (leader_elector::last_error()),
    /// or null. Passes and rounds are retried whatever it was, so this is how a caller sees,
    /// for example, a permission_error (see redcoord/jobs/acl.hpp) that no retry will cure.
    /// Thread-safe.
    [[nodiscard]] std::exception_ptr last_error() const;

    struct state;  ///< Internal.

private:
    std::shared_ptr<state> s_;
};

}  // namespace redcoord

REDCOORD_API_END
