#pragma once
/// @file
/// Jobs on Redis: delayed, prioritised, retried with back-off, deduplicated by id, with a
/// per-job timeout and deadline, cancellation and a stored result. Workers are job_worker
/// (job_worker.hpp).

#include <redcoord/core/errors.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/core/replication.hpp>
#include <redcoord/jobs/backoff.hpp>
#include <redcoord/jobs/job_types.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord {

class signal_hub;

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
    /// payload_too_large beyond 512 MiB, and replication_timeout when `replication.replicas` > 0 and fewer
    /// acknowledged in time.
    add_result add(std::string_view payload, const job_options& opts = {});
    /// Adds jobs in one script (atomically, in order, but a job after the jobs of the call it
    /// depends on): `jobs` is (payload, options) pairs. One result per job, in `jobs`' order.
    /// @throws as add(); nothing is added when any job's options are bad.
    /// @throws dependency_cycle when the calls' jobs depend on each other in a cycle;
    ///         unknown_dependency when a dependency is neither known nor in the call;
    ///         too_many_dependencies beyond max_job_dependencies (or a dependency given twice).
    std::vector<add_result> add_batch(const std::vector<std::pair<std::string, job_options>>& jobs);
    /// Adds a flow: `root` and, before it, its children (recursively), each node depending on
    /// its children (added to its depends_on) besides its own depends_on, in one script (one
    /// Cluster slot: every key shares the queue's hash tag), so either the whole flow is
    /// added or nothing. The root runs once every child completed (see
    /// job_options::on_dependency_failure for failures). Ids left empty are random.
    /// @return one result per job, children before their parent (depth first, in order), the
    ///         root last.
    /// @throws as add_batch().
    std::vector<add_result> add_flow(const flow_job& root);

    /// The job `id`, or nullopt when it is unknown (never added, or completed longer than
    /// keep_completed ago).
    [[nodiscard]] std::optional<job_info> get(std::string_view id);
    /// Cancels `id`: a waiting, delayed or waiting_children job fails at once; an active one
    /// is flagged and its worker's stop token fires (it fails when its handler returns, unless
    /// it completes). A failed job fails the jobs that wait for it (unless they ignore failed
    /// dependencies); a cancelled waiting_children job also cancels its dependencies that have
    /// not started and that no other job waits for, down its flow (active ones run on).
    /// @return the state it was in, or nullopt for an unknown job.
    std::optional<job_state> cancel(std::string_view id);
    /// Makes a dead or failed job waiting again, its attempts reset. @return false when the
    /// job is in another state or unknown.
    bool retry(std::string_view id);
    /// Deletes `id` with its result: a waiting, delayed, waiting_children, completed, failed
    /// or dead job (an active one is left alone: cancel() it first). The jobs waiting for it
    /// count it as a failed dependency. One script.
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
    /// Sets the concurrency limit of `group` (job_options::group): at most `limit` of its
    /// jobs run at once across all workers of the queue (0: no limit). Shared by every
    /// client of the queue (a hash on the server); applies from the next claim (running jobs
    /// are never stopped). A group without a limit set has none.
    /// @return the previous limit (0: none).
    /// @throws invalid_group for a bad group name.
    std::uint32_t set_group_limit(std::string_view group, std::uint32_t limit);
    /// The groups with ready or active jobs, and those with a limit, by name (at most 1000).
    /// One script.
    [[nodiscard]] std::vector<group_counts> groups();
    /// Jobs per state (waiting counts the ready jobs of every group too).
    [[nodiscard]] job_counts counts();
    /// The ids of up to `limit` jobs in `state` (0: all), in the order they run or ran:
    /// waiting ones by priority then age (the ungrouped ones only: a group's are in turns,
    /// see groups()), delayed ones by due time, waiting_children ones by
    /// when they were added, the others by when they started (active) or ended; skipping the
    /// first `offset` of them (pages: offset 0, limit, 2 * limit, ...). One ZRANGE.
    [[nodiscard]] std::vector<std::string> list(job_state state, std::size_t limit = 100,
                                                std::size_t offset = 0);

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

private:
    friend class job_worker;
    struct impl;
    // Immutable once built: copies of a queue share it (and its metrics sampling).
    std::shared_ptr<const impl> impl_;
};

}  // namespace redcoord

REDCOORD_API_END
