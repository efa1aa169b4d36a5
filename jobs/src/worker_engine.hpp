#pragma once
// Private to jobs: the decisions of a job_worker, without I/O (sans-I/O, as lock_engine and
// fair_engine). It never reads a clock: every call takes `now` (or the send time of the
// request a reply answers). The driver (job_worker.cpp) runs the scripts, the threads, the
// handler and the waits; it feeds the engine the decoded replies (job_replies.hpp) under its
// mutex (the engine is not thread-safe) and does what it answers. Tested without a server in
// tests/unit/jobs/worker_engine_test.cpp (seeded schedules against a model of the scripts).
//
// What it decides:
// - claims: how many jobs to ask for (prefetch, by the handler's recent run times), whether a
//   claim does the housekeeping, how long to idle after an empty claim;
// - settlement batching: a settlement waits at most settle_delay for the thread's next claim
//   to carry it, else the upkeep thread sends it (`flush_at()`);
// - heartbeats: when the next one is due and which (job, token) pairs it renews (a job whose
//   lease's local bound passed is not made ours again);
// - lease deadlines and stop decisions: each held job has a local lease bound (job_lease.hpp:
//   `sent + lease - margin`, moved on by confirmed heartbeats to their send time) and, with a
//   timeout, a stop time (`claim sent + timeout - timeout_margin`); watch() fires the stop
//   token of every job past either, on_beat_reply() those the server says are lost or
//   cancelled. Past its lease bound a job may run elsewhere, so its handler is told to stop
//   before that: the invariant the tests check.

#include "job_lease.hpp"
#include "job_replies.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

namespace redcoord::detail {

using worker_clock = std::chrono::steady_clock;

/// The job_worker_options the engine decides by.
struct worker_settings {
    std::chrono::milliseconds lease{10000};
    std::chrono::milliseconds poll_timeout{1000};
    std::chrono::milliseconds timeout_margin{1000};
    std::chrono::milliseconds settle_delay{2};
    std::size_t prefetch = 1;
    /// A settlement's claim skips the housekeeping (promote due, reclaim stalled) when this
    /// worker did it less than this long ago: two range reads on every job cost more than the
    /// claim itself, and due jobs wait at most this much longer.
    std::chrono::milliseconds housekeeping_interval{10};
    /// Between heartbeats; zero: lease / 3 (two may fail before the lease lapses).
    std::chrono::milliseconds beat_period{0};
};

/// The most jobs a thread claims at once (worker_settings::prefetch) for the option's value
/// `asked`: itself, or for 0 (the default) batched_prefetch with several handler threads (a
/// claim and a settlement per short job cost more on the server than the job: issue 37) and
/// 1 with one thread.
inline constexpr std::size_t batched_prefetch = 16;
[[nodiscard]] constexpr std::size_t prefetch_for(std::size_t threads, std::size_t asked) noexcept {
    if (asked != 0) return asked;
    return threads > 1 ? batched_prefetch : 1;
}

/// Why a job's stop token fired.
enum class stop_reason {
    lease_lapsed,  // its lease's local bound passed (heartbeats failed or came late)
    timed_out,     // its timeout, less the margin, passed
    lost,          // a heartbeat found it no longer ours
    cancelled,     // cancelled (a heartbeat's answer or the cancel channel)
};

/// One stop decision: `id`'s stop token fired (newly).
struct stop_decision {
    std::string id;
    stop_reason why = stop_reason::lease_lapsed;
};

/// A heartbeat to send: the (job, token) pairs to renew, in order.
struct beat_request {
    std::vector<std::pair<std::string, std::string>> jobs;
};

class worker_engine {
public:
    explicit worker_engine(worker_settings s, worker_clock::time_point now);

    [[nodiscard]] const worker_settings& settings() const noexcept { return s_; }

    // --- claims -----------------------------------------------------------------------
    /// How many jobs to claim: with prefetch > 1, as many as the thread's recent handler
    /// times (`average_us`; < 0: none yet) say it finishes within settle_delay, 1..prefetch.
    [[nodiscard]] std::size_t claim_size(double average_us) const noexcept;
    /// Whether a claim sent at `now` that carries settlements should do the housekeeping; if
    /// so it counts as done. A claim without settlements always does it (housekeeping_done()).
    bool housekeeping_due(worker_clock::time_point now) noexcept;
    void housekeeping_done(worker_clock::time_point now) noexcept { last_housekeeping_ = now; }
    /// How long to idle after a claim that found nothing: the server's `wait_ms` to the next
    /// due job (< 0: unknown), at most poll_timeout.
    [[nodiscard]] std::chrono::milliseconds idle_wait(std::int64_t wait_ms) const noexcept;
    /// The jobs of a claim sent at `sent` under `token` are held from now on (a job held
    /// under an earlier token is replaced). Returns the time the watch must run by when it is
    /// earlier than its plan (the driver re-arms its timer), else nullopt.
    std::optional<worker_clock::time_point> on_claimed(const std::vector<claimed_job_reply>& jobs,
                                                       const std::string& token,
                                                       worker_clock::time_point sent);

    // --- held jobs --------------------------------------------------------------------
    /// Whether `id` is held under `token`.
    [[nodiscard]] bool holds(const std::string& id, const std::string& token) const;
    /// The stop token of `id` under `token` (a never-firing one when not held).
    [[nodiscard]] std::stop_token stop_token(const std::string& id, const std::string& token) const;
    /// Whether `id`'s stop token fired (false when not held under `token`).
    [[nodiscard]] bool stop_requested(const std::string& id, const std::string& token) const;
    /// The handler's deadline: claim sent + timeout (nullopt: no timeout, or not held).
    [[nodiscard]] std::optional<worker_clock::time_point> deadline(const std::string& id,
                                                                   const std::string& token) const;
    /// The lease's local bound while the job is surely ours; nullopt once it passed.
    [[nodiscard]] std::optional<worker_clock::time_point> held_until(
        const std::string& id, const std::string& token) const;
    /// The job was cancelled (the cancel channel): its stop token fires. False if not held.
    bool cancel(const std::string& id);
    /// The job's settlement was sent (or failed to be): it is no longer held by this worker
    /// (a failed send leaves it to its lease, and another worker). No-op for another token.
    void forget(const std::string& id, const std::string& token);
    [[nodiscard]] std::size_t held_count() const noexcept { return jobs_.size(); }

    // --- settlement batching ----------------------------------------------------------
    /// A settlement was queued at `now`; `more_to_run`: the thread holds more claimed jobs
    /// (else its next claim carries the settlement at once). Returns true when this arms the
    /// flush (the driver wakes its upkeep thread).
    bool settlement_queued(worker_clock::time_point now, bool more_to_run) noexcept;
    /// When the upkeep thread sends the queued settlements (nullopt: not armed).
    [[nodiscard]] std::optional<worker_clock::time_point> flush_at() const noexcept {
        return flush_at_;
    }
    /// The queued settlements were taken for sending (by a flush or a claim).
    void flushed() noexcept { flush_at_.reset(); }

    // --- heartbeats and the watch -----------------------------------------------------
    /// When the upkeep thread must wake next: the next heartbeat or the armed flush.
    [[nodiscard]] worker_clock::time_point upkeep_due() const noexcept;
    /// At `now`: nullopt when no heartbeat is due; else the next one is planned and this one
    /// returned (it may be empty: nothing to renew, send nothing).
    std::optional<beat_request> beat(worker_clock::time_point now);
    /// The answers to a heartbeat sent at `sent`, received at `now`: renewed leases move on,
    /// lost and cancelled jobs are stopped.
    std::vector<stop_decision> on_beat_reply(const beat_request& sent_jobs,
                                             const std::vector<beat_status>& answers,
                                             worker_clock::time_point sent,
                                             worker_clock::time_point now);
    /// The watch at `now`: stops the jobs past their lease bound or timeout; `next` is when
    /// it must run again.
    struct watch_outcome {
        std::vector<stop_decision> stopped;
        worker_clock::time_point next;
    };
    watch_outcome watch(worker_clock::time_point now);
    /// When the watch is planned to run next.
    [[nodiscard]] worker_clock::time_point watch_next() const noexcept { return watch_next_; }

private:
    struct held {
        std::string token;
        std::stop_source stop;
        std::optional<worker_clock::time_point> stop_at;  // the timeout's, less the margin
        job_lease lease;
    };
    const held* find(const std::string& id, const std::string& token) const;
    [[nodiscard]] std::chrono::milliseconds beat_period() const noexcept;
    static void fire(const std::string& id, held& h, stop_reason why,
                     std::vector<stop_decision>& out);

    worker_settings s_;
    std::map<std::string, held> jobs_;
    std::optional<worker_clock::time_point> flush_at_;
    worker_clock::time_point next_beat_;
    worker_clock::time_point watch_next_;
    worker_clock::time_point last_housekeeping_{};
};

}  // namespace redcoord::detail
