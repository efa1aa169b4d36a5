#pragma once
/// @file
/// A double barrier (enter/leave) in Redis keys, as Curator's DistributedDoubleBarrier:
/// computation starts when `parties` have entered and ends when all have left.

#include <redcoord/core/export.hpp>
#include <redcoord/signaling/barrier.hpp>
#include <redcoord/signaling/signal_hub.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

REDCOORD_API_BEGIN
namespace redcoord {

class runtime;
namespace detail {
class timer;
}

/// One party of a double barrier. enter() waits until `parties` members are inside; leave()
/// waits until every member has left. The barrier is then reusable (a new round).
///
/// State (master, one hash slot), both keys expiring barrier_options::idle_ttl after their
/// last use: `<prefix>double_barrier:{name}` (hash: round, ready flag, parties) and
/// `<prefix>double_barrier:{name}:members` (sorted set: member -> lease expiry, server ms;
/// empty, hence gone, once a round is over). Scripts enter/leave atomically and publish on
/// channel `<prefix>double_barrier:{name}` when the group becomes ready or empty; waiters
/// subscribe FIRST, then read state, then wait, re-reading on every wake and every
/// arrival_lease/3.
///
/// A member's presence is a lease (barrier_options::arrival_lease) from enter() to leave(),
/// as Curator's ephemeral nodes live as long as their session: the waiting enter() refreshes
/// it, and once inside a timer on the runtime's timer thread (the runtime of the hub's master
/// pool) refreshes it every arrival_lease/3 until leave(). Every enter/leave/check drops members whose lease ran out. So a member that
/// dies (SIGKILL, host lost) at any point stops counting within one lease: the others'
/// leave() then completes, and a later round can enter.
///
/// A member whose lease lapsed (its process stalled past arrival_lease) is never told it is
/// inside when the group went on without it: enter() or leave() throws barrier_lease_lost.
/// A member that calls enter() while the previous round is still leaving waits
/// for that round to end. A timed-out enter() is withdrawn atomically; a timed-out leave()
/// stays left.
///
/// @par Cost
/// No thread of its own; while inside, one script run per arrival_lease/3 in its own lane of
/// the runtime's tick workers (a master that stalls past the command timeout delays only this
/// object's heartbeat, never another object's timers).
///
/// @par Thread safety
/// One object is one party; do not call it from two threads at once.
///
/// @par Errors
/// The constructor throws invalid_argument; enter() and leave() throw barrier_timeout,
/// barrier_lease_lost, invalid_argument (a different party count in Redis) and the master's
/// connection_error, timeout_error, pool_exhausted or reply_error; the destructor never throws.
class double_barrier {
public:
    /// Makes one party of the double barrier `name`; nothing is sent until enter().
    /// @param hub signal hub (its master pool runs the scripts; its prefix names the keys).
    /// @param name double barrier name (validate_name rules).
    /// @param parties members needed to start; must be >= 1.
    /// @param opts leases, TTLs and re-check timing (barrier_options).
    /// @throws invalid_argument for a bad name, parties or options.
    double_barrier(signal_hub& hub, std::string name, std::size_t parties,
                   barrier_options opts = {});
    /// Stops the heartbeat and leaves when still inside (best effort, no wait); never throws.
    ~double_barrier();
    double_barrier(const double_barrier&) = delete;
    double_barrier& operator=(const double_barrier&) = delete;

    /// Enters and waits until `parties` members are inside; then keeps this member's lease
    /// alive on the runtime's timer thread until leave().
    /// @param timeout milliseconds, counted from the call; milliseconds::max() (or anything
    ///        beyond ten years) waits without a deadline.
    /// @throws barrier_timeout naming how many had entered (the entry is withdrawn);
    /// @throws barrier_lease_lost when this member's lease lapsed and the group became ready
    ///         (or its round ended) without it;
    /// @throws usage_error when already inside; invalid_argument (a usage_error) for a
    ///         party-count mismatch; pool and hub errors.
    /// An enter() that ends with another error (a lost reply) may leave its entry counting
    /// until its lease lapses; the next enter() on this object resumes that entry (the same
    /// member id) instead of adding a second one, so a retry never counts this member twice.
    void enter(std::chrono::milliseconds timeout);
    /// Leaves and waits until every member has left (members whose lease ran out no longer
    /// count).
    /// @param timeout milliseconds, counted from the call; milliseconds::max() waits without
    ///        a deadline.
    /// @throws barrier_timeout naming how many are still inside (this member stays left);
    /// @throws barrier_lease_lost when this member had already been dropped (its lease lapsed
    ///         while inside, for example a stall past arrival_lease, or the barrier was reset): the
    ///         others may have finished without it;
    /// @throws usage_error when not inside; pool and hub errors.
    void leave(std::chrono::milliseconds timeout);
    /// True between a successful enter() and leave().
    [[nodiscard]] bool inside() const noexcept { return inside_; }
    /// Deletes the double barrier's keys, for example to change its party count, but only while no
    /// member holds a live lease (entering or inside): one atomic script. Members that resume
    /// after a reset get barrier_lease_lost, never "inside". Rarely needed: a dead member no
    /// longer wedges the barrier, it just stops counting after its lease.
    /// @return true when the keys were deleted; false (nothing changed) while a member is live.
    /// @throws connection and pool errors.
    bool reset();

private:
    struct phase;
    signal_hub& hub_;
    std::string name_;
    std::size_t parties_;
    barrier_options opts_;
    std::string state_key_, members_key_, channel_;
    std::string member_;
    std::uint64_t round_ = 0;
    bool inside_ = false;
    // The last enter() ended by an error other than timeout or lease loss: its entry may count
    // on the server, so the next enter() resumes it under the same member_.
    bool resume_entry_ = false;
    // The lease heartbeat while inside: a timer on the runtime's timer thread.
    void start_heartbeat();
    void stop_heartbeat() noexcept;
    std::shared_ptr<redcoord::runtime> rt_;  // before the timer: outlives it
    std::unique_ptr<detail::timer> heartbeat_;
};

}  // namespace redcoord

REDCOORD_API_END
