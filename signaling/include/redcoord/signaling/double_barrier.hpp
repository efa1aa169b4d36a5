#pragma once
/// @file
/// A double barrier (enter/leave) in Redis keys, as Curator's DistributedDoubleBarrier:
/// computation starts when `parties` have entered and ends when all have left.

#include <redcoord/signaling/barrier.hpp>
#include <redcoord/signaling/signal_hub.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace redcoord {

/// One party of a double barrier. enter() waits until `parties` members are inside; leave()
/// waits until every member has left. The barrier is then reusable (a new round).
///
/// State (master, one hash slot): `<prefix>double_barrier:{name}` (hash: round, ready flag,
/// parties) and `<prefix>double_barrier:{name}:members` (sorted set: member -> lease expiry,
/// server ms). Scripts enter/leave atomically and publish on channel
/// `<prefix>double_barrier:{name}` when the group becomes ready or empty; waiters subscribe
/// FIRST, then read state, then wait, re-reading on every wake and every arrival_lease/3.
///
/// While entering, a member's presence is a lease refreshed by its waiting call, so a member
/// that dies before the group is ready stops counting. Once ready, members are counted until
/// they leave (there is no heartbeat during the work between enter() and leave()), so a
/// member that dies then makes the others' leave() time out with barrier_timeout. A member
/// that calls enter() while the previous round is still leaving waits for that round to end.
/// A timed-out enter() is withdrawn atomically; a timed-out leave() stays left.
///
/// Thread-safety: one object is one party; do not call it from two threads at once.
class double_barrier {
public:
    /// @param parties members needed to start; must be >= 1.
    /// @throws invalid_argument for a bad name, parties or options.
    double_barrier(signal_hub& hub, std::string name, std::size_t parties, barrier_options opts = {});
    /// Leaves when still inside (best effort, no wait); never throws.
    ~double_barrier();
    double_barrier(const double_barrier&) = delete;
    double_barrier& operator=(const double_barrier&) = delete;

    /// Enters and waits until `parties` members are inside.
    /// @param timeout milliseconds, counted from the call.
    /// @throws barrier_timeout naming how many had entered (the entry is withdrawn);
    /// @throws usage error (redcoord::error) when already inside; invalid_argument for a
    ///         party-count mismatch; pool and hub errors.
    void enter(std::chrono::milliseconds timeout);
    /// Leaves and waits until every member has left.
    /// @throws barrier_timeout naming how many are still inside (this member stays left);
    /// @throws redcoord::error when not inside; pool and hub errors.
    void leave(std::chrono::milliseconds timeout);
    /// True between a successful enter() and leave().
    [[nodiscard]] bool inside() const noexcept { return inside_; }

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
};

}  // namespace redcoord
