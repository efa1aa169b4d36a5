#pragma once
/// @file
/// The runtime's callback executor: a few threads that run user callbacks (leadership changes,
/// lock-loss notices, signal handlers) in a guaranteed order per object. Internal to redcoord
/// (reached through runtime::callbacks()); not a stable API.

#include <redcoord/core/export.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

REDCOORD_API_BEGIN
namespace redcoord::detail {

/// How many callback threads an executor may run, and how long an idle extra one stays.
struct executor_options {
    /// Most worker threads at once (0 acts as 1). A worker is added only when a strand's ready
    /// task has waited grow_after behind workers busy with other strands' tasks, so quick
    /// callbacks keep one thread; this bounds the threads that blocking callbacks pile up.
    std::size_t max_threads = 16;
    /// How long a ready task waits behind busy workers before another worker joins in.
    std::chrono::milliseconds grow_after{10};
    /// A worker beyond the first that has found no work for this long ends.
    std::chrono::milliseconds idle_retire{2000};
};

/// Worker threads, started on demand, that run posted tasks, one task per strand at a time.
///
/// Ordering: tasks posted to one strand run one at a time, in the order they were posted
/// (so a primitive's elected/revoked, or lost, notices arrive paired and ordered). Tasks of
/// different strands may run at the same time on different workers: a callback that blocks
/// delays only the later tasks of its own strand (and other strands by about
/// executor_options::grow_after, the time a new worker takes to join in), as long as fewer
/// than executor_options::max_threads callbacks block at once (beyond that, ready strands
/// wait for a worker). Strands become ready in post order, and a worker takes the strand that has
/// waited longest.
///
/// Thread-safety: every member function may be called from any thread.
class serial_executor {
public:
    explicit serial_executor(executor_options opts = {});
    /// Drops queued tasks, waits for the running ones, joins the workers.
    ~serial_executor();
    serial_executor(const serial_executor&) = delete;
    serial_executor& operator=(const serial_executor&) = delete;

    /// True on one of this executor's workers (a callback is running).
    [[nodiscard]] bool on_executor_thread() const noexcept;
    /// Workers alive now.
    [[nodiscard]] std::size_t threads() const;
    /// Workers that took work so far (tests and diagnostics).
    [[nodiscard]] std::size_t threads_started() const;

    struct state;

private:
    friend class strand;
    std::shared_ptr<state> state_;
};

/// One object's ordered queue of callbacks on a serial_executor.
///
/// Thread-safety: every member function may be called from any thread.
class strand {
public:
    explicit strand(serial_executor& executor);
    /// close(): pending tasks are dropped, a running one is waited for (unless on it).
    ~strand();
    strand(const strand&) = delete;
    strand& operator=(const strand&) = delete;

    /// Queues `task` after the tasks already posted to this strand. An exception escaping
    /// the task is swallowed (the thread must survive a throwing user callback).
    /// Ignored after close(). @throws std::system_error when no worker runs and none can be
    /// started.
    void post(std::function<void()> task);
    /// Blocks until no task of this strand is queued or running (returns at once from a task
    /// of this strand, where waiting would deadlock).
    void drain();
    /// Drops pending tasks and waits for the running one (not when called from it); later
    /// posts are ignored.
    void close() noexcept;

private:
    std::shared_ptr<serial_executor::state> state_;
    std::uint64_t id_;
    bool closed_ = false;  // under the executor's mutex
};

/// The strand that log sink and metrics backend calls made on the calling thread are queued
/// on, or null (they run inline). The runtime's timer thread has its runtime's, so a slow sink
/// or backend (user code) never delays a watchdog or a lease deadline.
[[nodiscard]] strand* observer_outbox() noexcept;
/// Makes `s` the calling thread's observer outbox (null: none). The strand must outlive the
/// thread's use of it.
void set_observer_outbox(strand* s) noexcept;
/// Queues `fn` on `s`, or drops it when it cannot be queued (no worker can start): an
/// observation must never cost the operation that makes it.
void post_observation(strand& s, std::function<void()> fn) noexcept;

}  // namespace redcoord::detail

REDCOORD_API_END
