#pragma once
/// @file
/// Leader-only periodic work on top of a leader_elector.

#include <redcoord/core/export.hpp>
#include <redcoord/election/leader_elector.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>

REDCOORD_API_BEGIN
namespace redcoord {

/// Runs a callable periodically, only while `elector` leads, on the shared threads of the
/// elector's runtime: the task owns no thread.
///
/// Every `period` a check reads elector.current_leadership(); when leading it calls
/// `work(epoch, stop_token)`. The checks are a steady_timer on the runtime's event loop (its
/// I/O thread, or the caller's io_context for a runtime made with runtime::create(io)), which
/// only reads the elector's state; the work runs on a strand of the runtime's callback
/// executor of this task's own, never on the I/O thread. One run follows the other: the next
/// check is armed when a run returns, so runs never overlap.
///
/// The stop token is triggered when the leadership of that epoch ends (lost, resigned,
/// stopped, or its local deadline passed) while the call runs, or when the task stops. It is
/// stopped by the elector's own state transition (on the runtime's timer service, under the
/// elector's lock), never by the on_revoked() callbacks nor by this task's strand, so
/// application slots that throw or block, and this task's own queue, cannot skip or delay it:
/// it fires within a few milliseconds of is_leader() turning false (client-go's
/// OnStartedLeading context, cancelled by the renew loop). The work should pass the epoch to
/// downstream systems as its fencing token and return soon after the token fires. Exceptions
/// escaping `work` are swallowed.
///
/// Work that blocks for long holds one callback worker meanwhile. That delays only this
/// task's next checks: the executor adds a worker when another object's ready callback has
/// waited about 10 ms behind busy ones (up to 16 workers; an extra one ends after 2 s idle,
/// see runtime), so other objects' callbacks go on. Beyond 16 callbacks blocking at once,
/// the others wait for a worker; keep very long or numerous blocking work on threads of the
/// application.
///
/// @par Thread safety
/// Construct and destroy from one thread; the elector must outlive the task. stop() and the
/// destructor must not run inside `work` nor on the runtime's event loop (they wait for the
/// task's chain, which runs there); with runtime::create(io) the caller's `io` must be run
/// meanwhile.
///
/// @par Errors
/// The constructor throws invalid_argument for a bad period or an empty callable, and
/// std::system_error when the runtime's I/O thread cannot start; stop() and the destructor
/// never throw. An exception escaping the callable is swallowed and the next period runs.
///
/// @par Cost
/// No thread: one steady_timer on the event loop and one strand of the callback executor. It
/// sends nothing: leadership comes from the elector's rounds.
class leader_task {
public:
    /// The work: epoch (fencing token) of the leadership it runs under, and a stop token.
    using work_function = std::function<void(std::uint64_t epoch, std::stop_token stop)>;

    /// Starts the task: its first check runs at once on the runtime's event loop. `period`
    /// (milliseconds) is the pause between the end of one check (or call) and the next check;
    /// any positive value works, `milliseconds::max()` means forever (one check, then idle
    /// until stop(); the timer saturates, core/deadline.hpp).
    /// @throws invalid_argument when `period` <= 0 or `work` is empty;
    /// @throws std::system_error when the runtime's I/O thread cannot be started.
    leader_task(leader_elector& elector, std::chrono::milliseconds period, work_function work);
    /// stop(). Never throws.
    ~leader_task();
    leader_task(const leader_task&) = delete;
    leader_task& operator=(const leader_task&) = delete;

    /// Triggers the running call's stop token, cancels the pending check and waits until the
    /// running call (if any) has returned: afterwards `work` is never called again. Idempotent;
    /// never throws. Must not be called from inside `work` nor on the runtime's event loop.
    void stop() noexcept;
    /// Calls of `work` started so far.
    [[nodiscard]] std::uint64_t runs() const noexcept;

private:
    struct impl;
    std::shared_ptr<impl> impl_;
};

}  // namespace redcoord

REDCOORD_API_END
