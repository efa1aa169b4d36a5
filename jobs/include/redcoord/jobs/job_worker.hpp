#pragma once
/// @file
/// Runs the jobs of a job_queue on N threads: claim, call the handler, complete or fail
/// (retried per the job's back-off), with a stop token per job and a graceful drain.

#include <redcoord/core/export.hpp>
#include <redcoord/jobs/job_queue.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

REDCOORD_API_BEGIN
namespace redcoord {

/// One claimed job, as its handler sees it.
///
/// @par Thread safety
/// For the handler's thread; stop_token() may be passed to other threads.
class job_context {
public:
    /// The job's id.
    [[nodiscard]] const std::string& id() const noexcept { return id_; }
    /// Its payload (binary-safe).
    [[nodiscard]] const std::string& payload() const noexcept { return payload_; }
    /// This attempt's number, from 1.
    [[nodiscard]] unsigned attempt() const noexcept { return attempt_; }
    /// Attempts allowed in all.
    [[nodiscard]] unsigned max_attempts() const noexcept { return max_attempts_; }
    /// Its priority (0..9).
    [[nodiscard]] int priority() const noexcept { return priority_; }
    /// The results of its dependencies (job_options::depends_on; flows): id -> result bytes,
    /// read by the claim that handed this job out. A dependency without a stored result is
    /// absent: an empty result (never stored), one past job_queue_options::result_ttl (or with
    /// results off), or a failed one that this job ignores. Empty for a job without
    /// dependencies.
    [[nodiscard]] const std::map<std::string, std::string>& dependency_results() const noexcept {
        return dependency_results_;
    }
    /// Fires when the job is cancelled (job_queue::cancel()), when its timeout is about to
    /// pass (job_worker_options::timeout_margin before it), or when this worker no longer
    /// holds it or cannot be sure it does: the server says so (its lease lapsed, for example
    /// while the process was paused, and another worker took it over), or no heartbeat was
    /// confirmed within the lease (job_worker_options::lease), for example while the server
    /// was unreachable. The handler should then return soon; what it returns is then not
    /// recorded as a completion unless the job is still held.
    [[nodiscard]] std::stop_token stop_token() const noexcept { return stop_; }
    /// When this attempt's timeout (job_options::timeout) ends, on the worker's runtime clock
    /// (runtime_clock: the steady clock unless a test advanced it): past it
    /// the job counts as stalled and another worker may run it; stop_token() fires
    /// job_worker_options::timeout_margin before it. nullopt for a job without a timeout.
    [[nodiscard]] std::optional<std::chrono::steady_clock::time_point> deadline() const noexcept {
        return deadline_;
    }
    /// Until when this worker surely still holds the job, on the runtime clock (as deadline()):
    /// the local bound
    /// of its lease (job_worker_options::lease, less a drift allowance, from the send time of
    /// the claim or of the last confirmed heartbeat). Each confirmed heartbeat moves it on;
    /// past it, stop_token() fires and another worker may take the job. nullopt once the
    /// bound has passed (the server may also take the job away sooner: stop_token() tells).
    /// Thread-safe; takes the worker's lock, no I/O.
    [[nodiscard]] std::optional<std::chrono::steady_clock::time_point> held_until() const;
    /// Stores `progress` with the job (job_info::progress; any bytes) and announces it
    /// (job_event_kind::progress). One round trip.
    /// @return false when this worker no longer holds the job.
    /// @throws payload_too_large, before anything is sent, when the progress event (`progress`
    ///         plus the job id) is over the worker hub's signal_options::max_payload (8 MiB): a
    ///         larger pub/sub message would disconnect the event listeners and be lost;
    /// @throws connection_error / timeout_error as the pool's commands.
    bool report_progress(std::string_view progress);

private:
    friend class job_worker;
    job_context() = default;
    std::function<bool(std::string_view)> progress_;
    std::function<std::optional<std::chrono::steady_clock::time_point>()> held_until_;
    std::string id_, payload_;
    unsigned attempt_ = 0, max_attempts_ = 0;
    int priority_ = 0;
    std::stop_token stop_;
    std::optional<std::chrono::steady_clock::time_point> deadline_;
    std::map<std::string, std::string> dependency_results_;
};

/// The handler: returns the job's result (stored for job_queue_options::result_ttl) or throws
/// to fail the attempt (the exception's what() becomes job_info::error).
using job_handler = std::function<std::string(job_context&)>;

/// Options of a job_worker. Durations are milliseconds.
struct job_worker_options {
    std::size_t threads = 1;  ///< Handler threads; >= 1.
    /// How long a claimed job stays this worker's without a heartbeat; the heartbeat (on the
    /// worker's upkeep thread) renews it every lease / 3. A worker that dies or pauses past
    /// it loses its jobs to the others: they are retried per their policy. A job whose lease
    /// has gone unrenewed for the lease less a drift allowance (lease / 100 + 2 ms), counted
    /// from the send time of its claim or last confirmed heartbeat, has its stop token fired
    /// by the runtime's timer thread, whatever the server does (unreachable, paused, slow):
    /// past that, another worker may run it. >= 30 ms.
    std::chrono::milliseconds lease{10000};
    /// Longest idle wait between claims (a wake-up by signal usually comes first; the next
    /// delayed job's due time too). > 0.
    std::chrono::milliseconds poll_timeout{1000};
    /// Pause after a failed claim (server unreachable) before trying again. >= 0.
    std::chrono::milliseconds retry_delay{100};
    /// How long before a job's timeout its stop token fires. >= 0.
    std::chrono::milliseconds timeout_margin{100};
    /// The most jobs a thread claims at once, 0..1000. 0 (the default): 16 with threads > 1,
    /// 1 with one thread, so a worker with several threads batches short jobs unless told
    /// otherwise (1: one job per claim, the default up to 0.1). Above 1 a thread claims, in
    /// one call, as many ready jobs as its recent handler times say it finishes within
    /// settle_delay (1 until it has run one, and for long jobs), runs them in turn, and sends
    /// their completions and failures together with its next claim (or after settle_delay):
    /// for short jobs most of a job's cost on the server is the call, and the batch shares it.
    /// What it costs:
    /// - a job that becomes ready meanwhile, even of a higher priority, waits for the jobs
    ///   already claimed (about settle_delay of work, at most prefetch - 1 jobs per thread);
    /// - with an explicit prefetch above 1, groups take turns within each claim, but a job
    ///   waits for the rest of its thread's batch while other threads run theirs: 10 jobs of
    ///   a small group behind 1,000 of a large one ran after 24-56 of the large group's with
    ///   2 threads and prefetch 16, against 10-26 with one job per claim. So with the default
    ///   (0) a claim that finds grouped jobs ready takes one job, and batches only where no
    ///   group has ready jobs (tests Groups.ASmallTenantFinishesEarlyDespiteALargeOne,
    ///   JobsPrefetch.TheDefaultClaimsOneJobAtATimeWhileGroupsTakeTurns);
    /// - each claimed job counts an attempt; when the process dies its claimed jobs, started
    ///   or not, are retried after their leases lapse, with that attempt spent;
    /// - a job's completion (state, result, event) is recorded up to settle_delay after its
    ///   handler returns, and lost (the job runs again) if the process dies meanwhile.
    /// Jobs with a timeout or a deadline are only claimed first in a batch, so that they
    /// start at once. Cancelled jobs are not started; stop() gives unstarted ones back.
    std::size_t prefetch = 0;
    /// With prefetch > 1: the longest a finished job's settlement waits to be sent with the
    /// thread's next claim before it is sent alone (by the worker's upkeep thread). >= 0.
    std::chrono::milliseconds settle_delay{5};
    /// Holder label carried in this worker's id, which each job it claims records as its
    /// `worker` (shown by `jobs get`, `inspect` and the dashboard; core/holder_label.hpp):
    /// nullopt (the default) gives `<host>:<pid>`, an empty string none. At most
    /// max_holder_label bytes, no CR, LF or NUL (invalid_argument from the constructor).
    std::optional<std::string> label;
};

/// Counters of a job_worker, a snapshot.
struct job_worker_stats {
    std::uint64_t completed = 0;  ///< Jobs completed.
    std::uint64_t failed = 0;     ///< Attempts that failed (the handler threw).
    std::uint64_t lost = 0;       ///< Results not recorded: the job was no longer held.
    std::uint64_t errors = 0;     ///< Claims, completions or heartbeats that threw.
};

/// Runs `threads` workers on one job_queue.
///
/// Each thread claims the best ready job (the claim also promotes due delayed jobs and
/// reclaims stalled ones), calls the handler with a job_context and completes or fails it.
/// Idle threads wait for the queue's wake-up signal (published when a job becomes ready),
/// the next delayed job's due time, or poll_timeout, whichever comes first. The heartbeat
/// renews the lease of every running job and fires the stop tokens of cancelled or lost
/// ones; a cancel also arrives by signal at once. A timer with no I/O fires the stop tokens
/// of timed-out jobs, and of jobs whose lease no confirmed heartbeat has renewed in time.
///
/// stop() drains gracefully: no new claims; running handlers finish (their stop tokens are
/// not fired for it) and their jobs are completed or failed; claimed jobs that have not
/// started go back to waiting, their attempt undone, in their place; then the threads end. A
/// job whose completion cannot be written (server unreachable) is not lost: its lease lapses
/// and it is retried.
///
/// @par Thread safety
/// start()/stop() from one controlling thread; stats() and id() from any thread. The
/// handler runs on the worker threads, concurrently when threads > 1. The queue must
/// outlive the worker.
///
/// @par Errors
/// The constructor throws invalid_argument for bad options or an empty handler; start()
/// throws std::system_error when a thread cannot start; stop(), the destructor and stats()
/// never throw. Failures of claims, completions and heartbeats are counted, retried and kept
/// in last_error().
///
/// @par Cost
/// Per job: one round trip, the completion (or failure) and the next claim in one script; the
/// claims of a worker also promote due delayed jobs and reclaim stalled ones, at least every
/// 10 ms. With prefetch n (by default 16 with several threads): one round trip per up to n
/// short jobs. The heartbeat: one round trip per lease / 3 for all held jobs. One thread
/// besides the handlers' (heartbeats and batched settlements). One subscription (shared
/// through the runtime's pub/sub link).
///
/// @par Metrics and logs
/// With a metrics backend on the runtime (installed before construction):
/// `redcoord_jobs_settled_total{name, outcome}` (completed, retried, failed, dead, lost),
/// `redcoord_job_run_seconds{name, outcome}` (the handler's time, completed or failed) and
/// `redcoord_jobs_stalled_total{name}`. With a log sink: a warning when a job goes dead after a
/// failed attempt, and when a claim takes back jobs from stalled workers.
class job_worker {
public:
    /// A worker on `queue` running `handler`. Not started.
    /// @throws invalid_argument for bad options or an empty handler.
    job_worker(job_queue& queue, job_handler handler, job_worker_options opts = {});
    /// stop().
    ~job_worker();
    job_worker(const job_worker&) = delete;
    job_worker& operator=(const job_worker&) = delete;

    /// Subscribes to the queue's wake-ups (waiting up to min(poll_timeout, 1 s) for the
    /// server's confirmation), then starts the threads and the heartbeat. No-op when running.
    /// @throws std::system_error when a thread cannot start; permission_error when the ACL
    ///         user may not subscribe to the queue's channels.
    void start();
    /// Asks the threads to stop claiming and returns at once: running handlers finish and
    /// their jobs are settled, unstarted claimed jobs go back, as in stop(), which then waits
    /// for it. Thread-safe (a signal handler's thread, a handler, any other); no-op when not
    /// running. The same surface as queue_worker::request_stop().
    void request_stop() noexcept;
    /// Drains and stops (see the class comment). No-op when not running.
    void stop() noexcept;
    /// True between start() and the end of stop() (also after request_stop()). Thread-safe.
    [[nodiscard]] bool running() const noexcept;
    /// The counters.
    [[nodiscard]] job_worker_stats stats() const;
    /// This worker's id (recorded in job_info::worker).
    [[nodiscard]] const std::string& id() const noexcept;
    /// The latest failure counted in stats().errors (a claim, settlement or heartbeat that
    /// threw), or null. The threads retry after retry_delay whatever it was, so this is how a
    /// caller sees, for example, a permission_error (see redcoord/jobs/acl.hpp) that no retry
    /// will cure. Thread-safe.
    [[nodiscard]] std::exception_ptr last_error() const;

    struct state;  ///< Internal.

private:
    std::shared_ptr<state> s_;
};

}  // namespace redcoord

REDCOORD_API_END
