#pragma once
/// @file
/// Jobs on Redis: delayed, prioritised, retried with back-off, deduplicated by id, with a
/// per-job timeout and deadline, cancellation and a stored result. Workers are job_worker
/// (job_worker.hpp).

#include <redcoord/core/export.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/core/replication.hpp>
#include <redcoord/jobs/backoff.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord {

class signal_hub;

/// Where a job is in its life.
enum class job_state {
    waiting,    ///< Ready to run; taken by the highest priority first, FIFO within a level.
    delayed,    ///< Waiting for its due time (a delay, run_at, or a retry's back-off).
    active,     ///< Claimed by a worker and running.
    completed,  ///< Finished; readable (and its id deduplicated) for keep_completed.
    failed,     ///< Given up without running out of attempts: cancelled, or its deadline passed.
    dead,       ///< Out of attempts (the dead-letter set); retry() makes it waiting again.
};

/// The name of a state ("waiting", ...).
[[nodiscard]] std::string_view to_string(job_state s) noexcept;

/// How one job is to be run. Durations are milliseconds.
struct job_options {
    /// The job's id. Empty (the default): a random one. Given: adding a job whose id is still
    /// known (in any state, a completed one for keep_completed) adds nothing, so producers
    /// that may send twice deduplicate by it. Same rules as names (keys.hpp).
    std::string id;
    /// Run no sooner than this after the add (>= 0; measured by the server's clock).
    std::chrono::milliseconds delay{0};
    /// Run no sooner than this wall-clock time (the server's clock decides; ignored when
    /// unset). Overrides `delay`.
    std::optional<std::chrono::system_clock::time_point> run_at;
    /// Priority in 0 (lowest) .. 9 (highest); among ready jobs the highest runs first.
    int priority = 0;
    /// Attempts before the job goes dead (>= 1).
    unsigned max_attempts = 3;
    /// The delay before each retry.
    backoff_policy backoff = backoff_policy::exponential(std::chrono::milliseconds(1000),
                                                         std::chrono::milliseconds(3'600'000));
    /// Longest run of one attempt (0: no limit). The worker's stop token fires shortly before
    /// it passes; after it the job counts as stalled and is retried per its policy.
    std::chrono::milliseconds timeout{0};
    /// Discard the job when it has not started within this time after the add (0: never).
    /// A job past its deadline never starts; it is failed instead.
    std::chrono::milliseconds deadline{0};
};

/// What add() did.
struct add_result {
    std::string id;      ///< The job's id (the given or the generated one).
    bool added = false;  ///< False: a job with this id was already known.
    job_state state{};   ///< Its state now (the earlier job's, when not added).
};

/// A snapshot of one job.
struct job_info {
    std::string id;             ///< Its id.
    job_state state{};          ///< Its state.
    std::string payload;        ///< Its payload (binary-safe).
    int priority = 0;           ///< Its priority.
    unsigned attempts = 0;      ///< Attempts started so far.
    unsigned max_attempts = 0;  ///< Attempts allowed.
    std::string progress;       ///< The last report_progress() value, if any.
    std::string error;          ///< Why the last attempt failed, or why it was given up.
    /// The handler's result while it is kept; none for an empty result (not stored).
    std::optional<std::string> result;
    std::string worker;  ///< The worker that ran (or runs) it last.
    /// When it was added, by the server's clock.
    std::optional<std::chrono::system_clock::time_point> added_at;
    /// When a delayed job (a delay, run_at or a retry's back-off) becomes ready, by the
    /// server's clock; none in other states.
    std::optional<std::chrono::system_clock::time_point> due_at;
    /// When its last attempt started, by the server's clock; none before the first.
    std::optional<std::chrono::system_clock::time_point> started_at;
    /// When it completed, failed or went dead, by the server's clock; none before that.
    std::optional<std::chrono::system_clock::time_point> finished_at;
};

/// Jobs per state, a snapshot.
struct job_counts {
    std::uint64_t waiting = 0;    ///< Ready to run.
    std::uint64_t delayed = 0;    ///< Waiting for a due time.
    std::uint64_t active = 0;     ///< Running.
    std::uint64_t completed = 0;  ///< Finished and still kept.
    std::uint64_t failed = 0;     ///< Cancelled or past their deadline.
    std::uint64_t dead = 0;       ///< Out of attempts.
};

/// A repeatable job: a job added at each tick of a schedule by the queue's job_scheduler.
struct repeat_options {
    /// Ticks at every multiple of this interval since the Unix epoch (> 0), or 0 to use `cron`.
    std::chrono::milliseconds every{0};
    /// A cron expression (cron_schedule) when `every` is 0.
    std::string cron;
    /// The zone `cron` is read in (an IANA name such as `Europe/Berlin`, see time_zone).
    std::string time_zone = "UTC";
    /// What to do with ticks that passed while no scheduler ran (all schedulers down, or a
    /// leader's crash before its successor's term began).
    enum class missed_ticks {
        skip,      ///< Add only the latest missed tick.
        catch_up,  ///< Add every missed tick (at most 1000, the latest ones).
    };
    missed_ticks missed = missed_ticks::catch_up;  ///< The policy for missed ticks.
    /// Options of each job (`id` must be empty: a tick's id is `repeat:<name>:<tick ms>`).
    job_options job;
};

/// Options of a job_queue. Durations are milliseconds.
struct job_queue_options {
    /// Key prefix; the queue's keys are `<prefix>jobs:{<name>}:...`, all in one hash slot.
    std::string prefix = "redcoord:";
    /// How long a completed job stays readable by get(), and its id deduplicated. > 0.
    std::chrono::milliseconds keep_completed{std::chrono::hours(24)};
    /// How long a handler's result is kept (0: results are not stored). An empty result is
    /// never stored: a completed job with nothing to say costs no key.
    std::chrono::milliseconds result_ttl{std::chrono::hours(24)};
    /// At most this many jobs start per `rate_interval`, across all workers of the queue
    /// (0: no limit). A fixed window that opens with its first start. Give every process of
    /// the queue the same values.
    std::uint32_t rate_limit = 0;
    /// The rate limit's window. > 0.
    std::chrono::milliseconds rate_interval{1000};
    /// At most this many jobs run at once across all workers of the queue (0: no limit).
    std::uint32_t concurrency = 0;
    /// Replicas that must acknowledge an add (Redis WAIT, in the same write) before add() and
    /// add_batch() return; 0: the master's reply suffices, and a job added just before the
    /// master dies can be lost with it (asynchronous replication). With n > 0 an add that
    /// fewer replicas acknowledged within replica_timeout throws replication_timeout (the
    /// master has it; it is not durable yet). A job_scheduler's ticks wait the same way (an
    /// unconfirmed pass counts in its errors()), so a failover neither loses a tick nor adds
    /// it again. Settlements need no WAIT: one lost in a failover runs its job again (at
    /// least once), never loses it.
    std::size_t replicas = 0;
    /// How long an add waits for `replicas` acknowledgements. > 0 when replicas > 0.
    std::chrono::milliseconds replica_timeout{100};
};

/// A named job queue: the producer's and the operator's side (workers are job_worker).
///
/// Each job is a Redis hash; ready jobs wait in a sorted set by priority and order, delayed
/// ones in a sorted set by due time (the server's clock), running ones in a sorted set by the
/// end of their visibility: a worker's lease, renewed by its heartbeat, or the job's timeout,
/// whichever comes first. Claiming a job promotes due delayed jobs and reclaims stalled ones
/// (a dead worker's or a timed-out one's) in the same script, so no scheduler process is
/// needed for delays and retries. A failed attempt waits its back-off, then runs again, until
/// max_attempts; then the job is dead. Nothing is lost: every state change is one script.
/// Designs compared: BullMQ's job lifecycle, Sidekiq's retry set, the reliable-queue pattern
/// (redis.io, LMOVE).
///
/// @par Thread safety
/// All member functions may be called from any thread.
///
/// @par Errors
/// The constructor throws invalid_argument for a bad name or options; add() for bad job
/// options; every call throws connection_error / timeout_error / reply_error as the pool's
/// commands do.
///
/// @par Cost
/// add(): one script round trip (add_batch(): one for all); get(), cancel(), retry(),
/// counts(): one round trip each. Events (job_events) cost one PUBLISH inside the scripts that
/// complete and fail jobs and record progress.
///
/// @par Metrics
/// With a metrics backend on the pool's runtime (runtime::set_metrics(), before construction),
/// the gauge `redcoord_jobs{name, state}` is sampled at each scrape: one pipelined ZCARD per
/// state, on the scraping thread. Copies of a job_queue share the sampling.
class job_queue {
public:
    /// A queue named `name` on `pool` (which must outlive it).
    /// @throws invalid_argument for a bad name or options.
    job_queue(connection_pool& pool, std::string_view name, job_queue_options opts = {});

    /// Adds one job. @throws invalid_argument for bad options (priority outside 0..9,
    /// max_attempts 0, a negative delay, timeout or deadline, a bad back-off or id),
    /// payload_too_large beyond 512 MiB, and replication_timeout when `replicas` > 0 and fewer
    /// acknowledged in time.
    add_result add(std::string_view payload, const job_options& opts = {});
    /// Adds jobs in one script (atomically, in order): `jobs` is (payload, options) pairs.
    /// @throws as add(); nothing is added when any job's options are bad.
    std::vector<add_result> add_batch(const std::vector<std::pair<std::string, job_options>>& jobs);

    /// The job `id`, or nullopt when it is unknown (never added, or completed longer than
    /// keep_completed ago).
    [[nodiscard]] std::optional<job_info> get(std::string_view id);
    /// Cancels `id`: a waiting or delayed job fails at once; an active one is flagged and its
    /// worker's stop token fires (it fails when its handler returns, unless it completes).
    /// @return the state it was in, or nullopt for an unknown job.
    std::optional<job_state> cancel(std::string_view id);
    /// Makes a dead or failed job waiting again, its attempts reset. @return false when the
    /// job is in another state or unknown.
    bool retry(std::string_view id);
    /// Deletes `id` with its result: a waiting, delayed, completed, failed or dead job (an
    /// active one is left alone: cancel() it first). One script.
    /// @return the state it was removed from; nullopt for an unknown job; active (nothing
    ///         removed) for an active one.
    std::optional<job_state> remove(std::string_view id);
    /// Retention of finished jobs: deletes (with their results) the jobs in `state` that
    /// finished at least `older_than` ago by the server's clock, oldest first, at most
    /// `limit` (0: all). Completed jobs also expire by themselves (keep_completed); failed
    /// and dead ones stay until retried, removed or cleaned. Works in scripts of up to 1000
    /// jobs each, so other clients are not held up by a large clean.
    /// @return how many were deleted.
    /// @throws invalid_argument for a state other than completed, failed or dead, or a
    ///         negative `older_than`.
    std::size_t clean(job_state state, std::chrono::milliseconds older_than, std::size_t limit = 0);
    /// Pauses the queue: workers claim nothing until resume() (jobs already running finish,
    /// jobs can still be added, delayed jobs still fall due, and the leases of stalled workers
    /// are still taken back). Shared by every client of the queue (a key on the server).
    /// @return true when it was running, false when it was already paused.
    bool pause();
    /// Resumes a paused queue and wakes its idle workers (one publish), who claim at once.
    /// @return true when it was paused, false when it was already running.
    bool resume();
    /// Whether the queue is paused. One EXISTS.
    [[nodiscard]] bool paused();
    /// Jobs per state.
    [[nodiscard]] job_counts counts();
    /// The ids of up to `limit` jobs in `state` (0: all), in the order they run or ran:
    /// waiting ones by priority then age, delayed ones by due time, the others by when they
    /// started (active) or ended.
    [[nodiscard]] std::vector<std::string> list(job_state state, std::size_t limit = 100);

    /// Registers (or replaces) the repeatable job `name`: the queue's job_scheduler adds a job
    /// with `payload` at each tick, exactly once per tick (fenced by the scheduler's election
    /// epoch, and deduplicated by the tick's job id). A new repeat starts with the next tick
    /// after now; a replaced one keeps its last tick.
    /// @throws invalid_argument for a bad name, both or neither of `every` and `cron`, a bad
    ///         cron expression or zone, or bad job options (a non-empty id among them).
    void repeat(std::string_view name, std::string_view payload, const repeat_options& opts);
    /// Drops the repeatable job `name`; jobs already added stay. @return false when unknown.
    bool remove_repeat(std::string_view name);

    /// The queue's name.
    [[nodiscard]] const std::string& name() const noexcept;
    /// The pool.
    [[nodiscard]] connection_pool& pool() noexcept;
    /// The options.
    [[nodiscard]] const job_queue_options& options() const noexcept;

    struct keys;  ///< Internal.

private:
    friend class job_worker;
    connection_pool& pool_;
    std::string name_;
    job_queue_options opts_;
    std::shared_ptr<const keys> keys_;
    std::shared_ptr<void> observer_;  // the redcoord_jobs gauges (runtime metrics), or null
};

}  // namespace redcoord

REDCOORD_API_END
