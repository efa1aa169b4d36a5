#pragma once
/// @file
/// A fair (FIFO) lock on one Redis instance: the lock is granted in the order it was asked
/// for, and a waiter that dies while queued is skipped once its lease runs out (the idea of
/// Redisson's RFairLock (Redisson's distributed-locks documentation), with per-waiter leases as PX keys instead of its timeout
/// set, so no server clock arithmetic is needed).
///
/// ## Which lock to pick
/// distributed_lock is faster under contention (a holder that re-locks at once keeps the lock
/// for its turn, lock_options::handoff_after, as with std::mutex) and starves no waiter, but
/// promises no order. fair_lock serves waiters strictly in request order; each hand-off costs a
/// unicast PUBLISH and the woken waiter's round trip, and a waiter refreshes its lease every
/// waiter_lease / 3 while it waits (one EVALSHA each).
///
/// ## How it works (redis.io: SET PX, LPOS, RPUSH, PUBLISH, EVALSHA)
/// All keys share the resource's Cluster hash tag. The lock key `<prefix>lock:{<resource>}`
/// (the same key as distributed_lock's, so the two kinds exclude each other, although a
/// distributed_lock does not queue) holds the holder's token with PX ttl; the fencing counter
/// `...:fence` is the same INCR counter as distributed_lock's (tokens increase across both).
/// The queue `...:queue` lists waiter ids in request order; each queued waiter owns a lease key
/// `...:waiter:<id>` (PX waiter_lease) and a channel `...:wake:<id>`. One Lua script per step:
/// an attempt first drops dead waiters (lease gone) from the head of the queue, then takes the
/// lock only if it is free and the queue is empty or headed by the caller; otherwise it queues
/// the caller (once) and refreshes its lease. A release deletes the key (compare-and-delete)
/// and PUBLISHes to the head's own channel only, so exactly one waiter wakes. The head also
/// wakes when a holder that died expires (its PTTL), the one behind a dead head when that
/// head's lease runs out, and every waiter at least every waiter_lease / 3 to refresh its lease.
/// A waiter whose wait ends (try_lock_for's deadline) makes one last attempt that, refused,
/// also takes it out of the queue, so it delays nobody.
///
/// Bounds: a SIGKILLed queued waiter delays the ones behind it by at most its waiter_lease
/// (plus a round trip); a SIGKILLed holder by its TTL, as with any lock with a lease. A waiter
/// stalled (paused, starved of CPU) for longer than its waiter_lease loses its place and queues
/// again at the tail when it comes back.
///
/// ## Why not Redlock
/// The order is one list on one server: N independent masters would hold N queues that can
/// disagree, and a majority vote over them orders nothing. Use `replication` (Redis WAIT) for
/// durability of acquisitions instead. A failover to a replica keeps the lock and the queue as
/// far as they were replicated (with `replication.replicas >= 1`, every acquisition and extension that
/// counted); queue changes are not waited for, so a promoted replica may have an older queue:
/// waiters missing from it queue again at their next lease refresh (within waiter_lease / 3),
/// and the order among them is then the order of those refreshes. A restart without
/// persistence empties both: waiters re-queue the same way and lock() rides through the outage.
///
/// Requires Redis >= 6.0.6 (LPOS).
///
/// Fencing tokens: as distributed_lock (see its file comment: pass the token with every write
/// to the protected resource, which rejects tokens lower than the highest it has seen).

#include <redcoord/core/deadline.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/core/holder_label.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/core/options.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/lock/acquisition.hpp>
#include <redcoord/lock/errors.hpp>

#include <boost/signals2/connection.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

REDCOORD_API_BEGIN
namespace redcoord {

/// Options of a fair_lock.
struct fair_lock_options {
    /// Lease length and drift allowance of the lock key (core/options.hpp): `ttl` is its PX.
    /// Its waiting fields are not used: a release wakes the head of the queue alone (no herd to
    /// spread) and a waiter wakes at least every waiter_lease / 3.
    lock_timing timing;
    /// Lease of a queued waiter, in milliseconds: a waiter refreshes it every waiter_lease / 3
    /// while it waits, and one that stops refreshing (dead, or stalled this long) is skipped.
    /// This bounds how long a dead waiter delays the queue; shorter costs more refreshes (one
    /// script call per waiter per waiter_lease / 3) and makes a briefly stalled waiter lose its
    /// place sooner. Must be >= 3 ms. Default 1 s.
    std::chrono::milliseconds waiter_lease{1000};
    /// Opt-in watchdog: while held, the runtime's timer thread extends the lock to `ttl` every
    /// ttl/3, as distributed_lock's (see lock_options::watchdog: its loss reporting and the
    /// pool sizing rule, max_size >= 2, checked).
    bool watchdog = false;
    /// Most confirmed extensions per acquisition (watchdog and extend() together); see
    /// lock_options::max_extensions. Must be > 0 when `watchdog` is on.
    std::size_t max_extensions = std::numeric_limits<std::size_t>::max();
    /// Replicas that must acknowledge an acquisition and an extension (Redis WAIT,
    /// core/options.hpp); none by default. An acquisition fewer replicas acknowledged within
    /// `replication.timeout` is given back at once and its waiter stays at the head of the
    /// queue and tries again after that timeout. `replication.timeout` must be below
    /// `timing.ttl`.
    replication_options replication;
    /// Key prefix; keys are `<prefix>lock:{<resource>}` and its `:fence`, `:queue` and
    /// `:waiter:<id>` siblings.
    std::string prefix{default_prefix};
    /// Holder label carried in each holding's token (core/holder_label.hpp), shown by
    /// `inspect`, the dashboard and the CLI: nullopt (the default) gives `<host>:<pid>`, an
    /// empty string none. At most max_holder_label bytes, no CR, LF or NUL (invalid_argument
    /// from the constructor). Informative only: ownership is the whole token.
    std::optional<std::string> label;
};

namespace detail {
struct lock_access;
}  // namespace detail

/// A FIFO mutual-exclusion lock on one Redis instance, usable as a C++ *Lockable* /
/// *TimedLockable* (std::unique_lock, std::scoped_lock, std::condition_variable_any), with the
/// same names and semantics as distributed_lock except for the order of grants.
///
/// Order: among fair_lock objects, the lock is granted in the order their acquire calls were
/// queued in Redis (a call queues with its first attempt). One object is one waiter with one
/// stable id; threads of this process that share an object are serialised locally first, in
/// no particular order, and only then queue in Redis. Not recursive: locking an object again
/// from the thread that holds it throws invalid_argument.
///
/// @par Cost
/// An uncontended acquire and a release are one EVALSHA round trip each; unlock() does
/// not wait for its reply. A contended acquire subscribes the object's own channel once
/// (through its pool's runtime: one shared pub/sub link per endpoint, no thread and no
/// connection of its own; the subscription is kept until the object is destroyed), then
/// sleeps until it is woken by the hand-off or refreshes its lease every waiter_lease / 3.
///
/// @par Thread safety
/// All members may be called from any thread. The loss callback runs on the runtime's
/// callback executor, through a strand of this object (never on the timer thread that finds
/// the loss, nor on the thread calling extend()): shortly after lost() turns true, in order,
/// and a slow slot delays only this object's later callbacks. It must not call back into this
/// object's blocking functions nor destroy it.
///
/// @par Errors
/// As distributed_lock: acquire() and its forms throw connection_error, timeout_error,
/// pool_exhausted or reply_error (lock() only what retrying cannot cure) and invalid_argument when
/// the calling thread already holds the object; release() and extend() throw outcome_unknown for a
/// lost reply; unlock() and the destructor never throw; fencing_token() and check_held() throw
/// lock_lost when not held.
class fair_lock {
public:
    /// A callback for on_lost(): gets the resource name.
    using lost_slot = std::function<void(const std::string& resource)>;

    /// Makes a fair lock on `resource` over `pool` (which must outlive the object), with a new
    /// random waiter id. Nothing is sent until the first acquisition.
    /// @throws invalid_argument for a bad resource name (see validate_name), bad options, or
    ///         the watchdog with a pool of max_size < 2.
    fair_lock(connection_pool& pool, std::string resource, fair_lock_options opts = {});
    /// Releases the lock if held (best effort, errors swallowed), stops the watchdog and the
    /// subscription. Never throws; bounded by the command and connect timeouts.
    ~fair_lock();
    fair_lock(const fair_lock&) = delete;
    fair_lock& operator=(const fair_lock&) = delete;

    /// Tries to acquire in turn, waiting up to `wait` (milliseconds; zero: one attempt, which
    /// succeeds only if the lock is free and nobody is queued).
    /// @return the acquisition, or nullopt when the wait passed without it (the call is then
    ///         out of the queue).
    /// @throws connection_error, timeout_error, pool_exhausted, reply_error when Redis cannot
    ///         be asked (the call leaves the queue first, best effort; else its lease expires);
    /// @throws invalid_argument when the calling thread already holds this object.
    [[nodiscard]] std::optional<lock_acquisition> acquire(std::chrono::milliseconds wait);
    /// The same, waiting until `deadline` (steady clock).
    [[nodiscard]] std::optional<lock_acquisition> acquire_until(
        std::chrono::steady_clock::time_point deadline);
    /// acquire(), which also ends when `stop` is requested (from any thread): the request wakes
    /// the wait at once and ends it as its deadline would, with one last attempt (which may
    /// still win: check the result) that takes the call out of the queue. For a caller that
    /// must stay interruptible without losing its place in the queue (re-queueing in slices
    /// would go to the back each time), such as the CLI noticing SIGTERM. A call still waiting
    /// for another thread of this process that holds the same object is not woken by it.
    [[nodiscard]] std::optional<lock_acquisition> acquire(std::chrono::milliseconds wait,
                                                          std::stop_token stop);
    /// The same, waiting until `deadline` (steady clock) or a stop request.
    [[nodiscard]] std::optional<lock_acquisition> acquire_until(
        std::chrono::steady_clock::time_point deadline, std::stop_token stop);

    /// Extends the lock to `ttl` from now (compare-and-pexpire); validity becomes
    /// `now + ttl - drift`.
    /// @return true when extended; false when not held by this object, lost (lost() becomes
    ///         true and the callback fires), or the max_extensions budget is used up.
    /// @throws invalid_argument for ttl <= 0;
    /// @throws outcome_unknown when the request was sent but its reply was lost;
    /// @throws connection_error / pool_exhausted when it could not be sent.
    [[nodiscard]] bool extend(std::chrono::milliseconds ttl);
    /// Same, with the configured ttl.
    [[nodiscard]] bool extend();

    /// Releases (compare-and-delete, then a PUBLISH to the head waiter only) and waits for the
    /// answer. Local state is cleared whatever happens.
    /// @return true when the key still held our token and was deleted; false when the lock
    ///         was not held or no longer ours.
    /// @throws outcome_unknown when the request was sent but its reply was lost;
    /// @throws connection_error / pool_exhausted when it could not be sent.
    bool release();

    /// True when the current holding can no longer be trusted (an extension found the key gone
    /// or someone else's, or the validity passed without extension). False when not held.
    [[nodiscard]] bool lost() const;
    /// True while this object holds the lock (even if lost() since; call release()).
    [[nodiscard]] bool held() const;
    /// The current acquisition (token, validity, fencing token), or nullopt when not held.
    [[nodiscard]] std::optional<lock_acquisition> current() const;
    /// The fencing token of the current acquisition. @throws lock_lost when not held.
    [[nodiscard]] std::uint64_t fencing_token() const;
    /// @throws lock_lost when not held or lost(); for code that must not go on without it.
    void check_held() const;

    /// Calls `slot` once per holding that is found lost, until the returned connection is
    /// disconnected or destroyed; same threads, order and rules as distributed_lock::on_lost().
    [[nodiscard]] boost::signals2::scoped_connection on_lost(lost_slot slot);

    /// Lockable: blocks until acquired in turn, and returns only with the lock held. Transient
    /// faults (server down or restarting, a busy pool, a lost reply) are ridden through with a
    /// pause growing up to waiter_lease / 3 (a restart that lost the queue is re-joined).
    /// @throws auth_error, reply_error, protocol_error for faults retrying cannot cure;
    /// @throws invalid_argument when the calling thread already holds this object.
    void lock();
    /// Lockable: one attempt, no waiting, no queueing. @throws as acquire().
    [[nodiscard]] bool try_lock();
    /// TimedLockable: waits up to `d`. @throws as acquire().
    template <class Rep, class Period>
    [[nodiscard]] bool try_lock_for(const std::chrono::duration<Rep, Period>& d) {
        return acquire_until(deadline_after(d)).has_value();
    }
    /// TimedLockable: waits until `tp` (any clock; converted to steady time once).
    template <class Clock, class Duration>
    [[nodiscard]] bool try_lock_until(const std::chrono::time_point<Clock, Duration>& tp) {
        return acquire_until(deadline_after(tp - Clock::now())).has_value();
    }
    /// Lockable: releases without waiting for Redis's answer (written before unlock() returns,
    /// its reply read by the connection's next command; on a Redis Cluster read at once, to
    /// follow a slot that moved), as distributed_lock::unlock(). Never throws.
    void unlock() noexcept;

    /// The resource name.
    [[nodiscard]] const std::string& resource() const noexcept;
    /// The lock key in Redis.
    [[nodiscard]] const std::string& key() const noexcept;
    /// This object's waiter id (40 hex characters), as it appears in the queue.
    [[nodiscard]] const std::string& waiter_id() const noexcept;

private:
    friend struct detail::lock_access;
    struct impl;
    std::unique_ptr<impl> impl_;
};

}  // namespace redcoord

REDCOORD_API_END
