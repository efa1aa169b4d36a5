#pragma once
/// @file
/// The runtime's callback executor: one thread that runs user callbacks (leadership changes,
/// lock-loss notices, signal handlers) in a guaranteed order per object. Internal to redcoord
/// (reached through runtime::callbacks()); not a stable API.

#include <redcoord/core/export.hpp>

#include <cstdint>
#include <functional>
#include <memory>

REDCOORD_API_BEGIN
namespace redcoord::detail {

/// One thread, started on the first post(), that runs posted tasks in post order.
///
/// Ordering: tasks posted to one strand run one at a time, in the order they were posted
/// (so a primitive's elected/revoked, or lost, notices arrive paired and ordered). Tasks of
/// different strands share the thread, so a callback that blocks delays every other
/// object's callbacks of this runtime: long work belongs on the user's own threads.
///
/// Thread-safety: every member function may be called from any thread.
class serial_executor {
public:
    serial_executor();
    /// Drops queued tasks, waits for the running one, joins the thread.
    ~serial_executor();
    serial_executor(const serial_executor&) = delete;
    serial_executor& operator=(const serial_executor&) = delete;

    /// True on the executor's thread (a callback is running).
    [[nodiscard]] bool on_executor_thread() const noexcept;

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
    /// Ignored after close(). @throws std::system_error when the thread cannot be started.
    void post(std::function<void()> task);
    /// Blocks until no task of this strand is queued or running (returns at once on the
    /// executor thread, where waiting would deadlock).
    void drain();
    /// Drops pending tasks and waits for the running one (not when called from it); later
    /// posts are ignored.
    void close() noexcept;

private:
    std::shared_ptr<serial_executor::state> state_;
    std::uint64_t id_;
    bool closed_ = false;  // under the executor's mutex
};

}  // namespace redcoord::detail

REDCOORD_API_END
