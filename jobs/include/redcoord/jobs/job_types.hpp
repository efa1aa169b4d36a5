#pragma once
/// @file
/// The value types of jobs (redcoord/jobs/job_queue.hpp): states, job and queue options, what
/// get() and counts() return, the typed errors of a bad add. Apart from job_queue, so the
/// worker's sans-I/O engine and the reply decoders read them without pulling in connections
/// and pools.

#include <redcoord/core/errors.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/core/options.hpp>
#include <redcoord/jobs/backoff.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord {

/// Where a job is in its life.
enum class job_state {
    waiting,    ///< Ready to run; taken by the highest priority first, FIFO within a level.
    delayed,    ///< Waiting for its due time (a delay, run_at, or a retry's back-off).
    active,     ///< Claimed by a worker and running.
    completed,  ///< Finished; readable (and its id deduplicated) for keep_completed.
    failed,     ///< Given up without running out of attempts: cancelled, or its deadline passed.
    dead,       ///< Out of attempts (the dead-letter set); retry() makes it waiting again.
    /// Waiting for its dependencies (job_options::depends_on) to complete; then waiting (or
    /// delayed until its own due time).
    waiting_children,
};

/// What a job does when one of its dependencies fails or goes dead (or is removed).
enum class dependency_failure {
    fail,    ///< It fails too (error `dependency <id> failed`), and so do the jobs waiting for it.
    ignore,  ///< It counts the dependency as done (without a result) and runs when the rest are.
};

/// The most dependencies of one job (job_options::depends_on).
inline constexpr std::size_t max_job_dependencies = 1000;

/// Bad dependencies given to job_queue::add(), add_batch() or add_flow(); nothing was added.
class dependency_error : public invalid_argument {
public:
    using invalid_argument::invalid_argument;
};

/// The dependencies of the jobs of one call form a cycle (a job that depends on itself among
/// them). Detected before anything is sent.
class dependency_cycle : public dependency_error {
public:
    using dependency_error::dependency_error;
};

/// A dependency is neither a known job of the queue nor a job of the same call (the server
/// checked every job's dependencies before writing any).
class unknown_dependency : public dependency_error {
public:
    /// @param dependency the unknown id; @param job the job that named it; @param message for
    ///        what().
    unknown_dependency(std::string dependency, std::string job, const std::string& message)
        : dependency_error(message), dependency_(std::move(dependency)), job_(std::move(job)) {}
    /// The unknown dependency's id.
    [[nodiscard]] const std::string& dependency() const noexcept { return dependency_; }
    /// The id of the job that named it.
    [[nodiscard]] const std::string& job() const noexcept { return job_; }

private:
    std::string dependency_, job_;
};

/// More than max_job_dependencies dependencies for one job, an empty or malformed dependency
/// id, or dependencies given twice.
class too_many_dependencies : public dependency_error {
public:
    using dependency_error::dependency_error;
};

/// The longest group name in bytes (job_options::group).
inline constexpr std::size_t max_group_length = 128;

/// A bad job_options::group (empty when given, longer than max_group_length, or holding a
/// brace or a control character). Nothing was added.
class invalid_group : public invalid_argument {
public:
    using invalid_argument::invalid_argument;
};

/// Debounce (job_options::debounce) of a job that has started (active) or waits for its
/// dependencies (waiting_children): refused by the server before anything of the call was
/// written. An invalid_argument, as unknown_dependency is: the call was refused as a whole.
class debounce_refused : public invalid_argument {
public:
    /// @param job the job's id; @param state its state; @param message for what().
    debounce_refused(std::string job, job_state state, const std::string& message)
        : invalid_argument(message), job_(std::move(job)), state_(state) {}
    /// The job's id.
    [[nodiscard]] const std::string& job() const noexcept { return job_; }
    /// The state it was in (active or waiting_children).
    [[nodiscard]] job_state state() const noexcept { return state_; }

private:
    std::string job_;
    job_state state_;
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
    /// Jobs (ids) that must complete before this one runs (flows; at most
    /// max_job_dependencies, no duplicates). Each must be a known job of the queue or an
    /// job of the same add_batch() or add_flow() call. Until the last
    /// one completes the job is waiting_children; its handler then reads their results
    /// (job_context::dependency_results()). Its `delay` and `run_at` still apply after that;
    /// its `deadline` counts from the add, as for any job.
    std::vector<std::string> depends_on;
    /// What a failed, dead or removed dependency does to this job.
    dependency_failure on_dependency_failure = dependency_failure::fail;
    /// The group (tenant) the job belongs to (none: ungrouped). Ready jobs are claimed from
    /// the groups (and the ungrouped jobs, as one more lane) in turn, one job per turn, so a
    /// group with many jobs does not starve one with few; at most the group's limit
    /// (job_queue::set_group_limit()) run at once. Priorities order the jobs within a group
    /// (and within the ungrouped ones), not across groups. 1 to max_group_length bytes,
    /// without `{`, `}` or control characters (invalid_group). Not for repeatable jobs.
    std::optional<std::string> group;
    /// Deduplication window (0: the default, an id is deduplicated while its job is known).
    /// Positive: once this long has passed since the add, an add of the same id replaces
    /// the job if it has finished (completed, failed or dead: it is forgotten with its
    /// result); a job still waiting, delayed, waiting for children or active deduplicates
    /// as before. Needs an `id`; >= 0.
    std::chrono::milliseconds dedupe_for{0};
    /// Debounce (0: off). Positive: an add of an id whose job is waiting or delayed replaces
    /// its payload and options (group included) and delays it until at least this long from
    /// now (add_result::debounced); a new job is delayed the same way. An add of an id
    /// whose job is active or waiting_children throws debounce_refused, and nothing of the
    /// call is written; a finished job deduplicates (see `dedupe_for`). Needs an `id`, no
    /// `depends_on`; >= 0.
    std::chrono::milliseconds debounce{0};
};

/// A parent job and the jobs it depends on, for job_queue::add_flow(): a tree, each node's
/// children added before it and added to its job_options::depends_on.
struct flow_job {
    std::string payload;             ///< The job's payload.
    job_options options;             ///< Its options (an empty id: a random one).
    std::vector<flow_job> children;  ///< Jobs it waits for (each a flow of its own).
};

/// What add() did.
struct add_result {
    std::string id;      ///< The job's id (the given or the generated one).
    bool added = false;  ///< False: a job with this id was already known.
    /// The known job was waiting or delayed and was replaced by this add
    /// (job_options::debounce); `added` is false then.
    bool debounced = false;
    job_state state{};  ///< Its state now (the earlier job's, when not added).
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
    /// Its dependencies (job_options::depends_on), in the order given.
    std::vector<std::string> dependencies;
    /// Those it still waits for (while waiting_children), sorted.
    std::vector<std::string> pending_dependencies;
    /// The jobs waiting for it to end (waiting_children jobs that depend on it), sorted.
    std::vector<std::string> dependents;
    /// Whether a failed dependency is ignored (job_options::on_dependency_failure).
    dependency_failure on_dependency_failure = dependency_failure::fail;
};

/// Jobs per state, a snapshot.
struct job_counts {
    std::uint64_t waiting = 0;           ///< Ready to run.
    std::uint64_t delayed = 0;           ///< Waiting for a due time.
    std::uint64_t active = 0;            ///< Running.
    std::uint64_t completed = 0;         ///< Finished and still kept.
    std::uint64_t failed = 0;            ///< Cancelled or past their deadline.
    std::uint64_t dead = 0;              ///< Out of attempts.
    std::uint64_t waiting_children = 0;  ///< Waiting for their dependencies.
};

/// One group of a queue (job_options::group), a snapshot.
struct group_counts {
    std::string name;           ///< The group.
    std::uint64_t waiting = 0;  ///< Its ready jobs.
    std::uint64_t active = 0;   ///< Its running jobs.
    std::uint32_t limit = 0;    ///< Its concurrency limit (0: none).
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
    /// add_batch() return (core/options.hpp, shared with the other parts): `replicas` 0 (the
    /// default): the master's reply suffices, and a job added just before the master dies can
    /// be lost with it (asynchronous replication). With n > 0 an add that fewer replicas
    /// acknowledged within `timeout` (> 0 then; default 100 ms) throws replication_timeout
    /// (the master has it; it is not durable yet). A job_scheduler's ticks wait the same way
    /// (an unconfirmed pass counts in its errors()), so a failover neither loses a tick nor
    /// adds it again. Settlements need no WAIT: one lost in a failover runs its job again (at
    /// least once), never loses it.
    replication_options replication;
};

}  // namespace redcoord
REDCOORD_API_END
