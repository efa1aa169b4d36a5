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

/// Runs a callable periodically, only while `elector` leads.
///
/// Every `period` the task's own thread reads elector.current_leadership(); when leading it
/// calls `work(epoch, stop_token)`. The stop token is triggered when the leadership of that
/// epoch ends (lost, resigned, stopped, or its local deadline passed) while the call runs, or
/// when the task stops. It is driven by the elector's state transitions and its deadline
/// timer, never by the on_revoked() callbacks, so application slots that throw or block cannot skip
/// or delay it: it fires within a few milliseconds of is_leader() turning false (client-go's
/// OnStartedLeading context, cancelled by the renew loop). The work should pass the epoch to
/// downstream systems as its fencing token and return soon after the token fires. Runs never
/// overlap. Exceptions escaping `work` are swallowed.
///
/// @par Thread safety
/// Construct and destroy from one thread; the elector must outlive the task.
///
/// @par Errors
/// The constructor throws invalid_argument for a bad period or an empty callable, and
/// std::system_error when its thread cannot start; stop() and the destructor never throw. An
/// exception escaping the callable is swallowed and the next period runs.
///
/// @par Cost
/// One thread of its own; it sends nothing: leadership comes from the elector's rounds.
class leader_task {
public:
    /// The work: epoch (fencing token) of the leadership it runs under, and a stop token.
    using work_function = std::function<void(std::uint64_t epoch, std::stop_token stop)>;

    /// Starts the task thread at once. `period` is the pause between the end of one check (or
    /// call) and the next check; any positive value works, `milliseconds::max()` means forever
    /// (one check, then idle until stop(); the wait saturates, core/deadline.hpp).
    /// @throws invalid_argument when `period` <= 0 or `work` is empty;
    /// @throws std::system_error when the thread cannot be started.
    leader_task(leader_elector& elector, std::chrono::milliseconds period, work_function work);
    /// stop(). Never throws.
    ~leader_task();
    leader_task(const leader_task&) = delete;
    leader_task& operator=(const leader_task&) = delete;

    /// Triggers the running call's stop token and joins the thread. Idempotent; never throws.
    /// Must not be called from inside `work`.
    void stop() noexcept;
    /// Calls of `work` started so far.
    [[nodiscard]] std::uint64_t runs() const noexcept;

private:
    struct impl;
    std::shared_ptr<impl> impl_;
};

}  // namespace redcoord

REDCOORD_API_END
