#pragma once
/// @file
/// The option groups several primitives share, so that a field means one thing with one default
/// everywhere it appears: `lock_timing` (a lease's length, its clock drift allowance and how a
/// refused caller waits) and `replication_options` (Redis WAIT after a write). Plain values: no
/// I/O header is included.
///
/// Both follow the redis.io page "Distributed Locks with Redis"
/// (https://redis.io/docs/manual/patterns/distributed-locks/; the seed documents 001-004 hold
/// copies): the lease is the key's PX, the validity is `ttl - elapsed - drift` with drift =
/// `ttl * drift_factor + 2 ms` ("Is the algorithm asynchronous?"), a refused client retries after
/// a random delay "in order to try to desynchronize multiple clients trying to acquire the lock
/// for the same resource at the same time" ("Retry on Failure"), and WAIT narrows the failover
/// window of "Why Failover-based Implementations Are Not Enough".

#include <redcoord/core/export.hpp>

#include <chrono>
#include <cstddef>
#include <string_view>

REDCOORD_API_BEGIN
namespace redcoord {

/// The clock drift allowance of the Redlock page: `ttl * drift_factor + 2 ms` (the fraction
/// rounded up to the microsecond). A holder's validity ends this long before its lease does in
/// Redis, so a local clock that runs a little slow cannot make it act on an expired lease.
/// Thread-safety: pure function.
[[nodiscard]] std::chrono::microseconds clock_drift(std::chrono::milliseconds ttl,
                                                    double drift_factor) noexcept;

/// How long a holding lasts and how a refused caller waits: shared by distributed_lock
/// (lock_options), redlock (redlock_options), fair_lock (fair_lock_options), semaphore
/// (semaphore_options) and rw_lock (rw_lock_options), where every field means the same.
///
/// Which part reads which field: `ttl`, `drift_factor` all of them; `max_retry_interval`
/// distributed_lock, redlock, semaphore and rw_lock (a fair_lock waiter wakes at least every
/// waiter_lease / 3 instead); `retry_jitter` and `wake_jitter` distributed_lock and redlock
/// (a fair_lock release wakes one waiter only, so there is no herd to spread; the semaphore and
/// rw_lock do not use them yet).
///
/// Checked by each primitive's constructor (invalid_argument naming the field, as
/// `lock_options::timing.ttl`). Thread-safety: a plain value type.
struct lock_timing {
    /// Lease of a holding (the key's PX, or a permit's or share's score), in milliseconds: a
    /// holding not released or extended within it ends by itself, so a holder that dies
    /// (SIGKILL, crash, partition) blocks nobody for longer. Must be > 0 and exceed the drift
    /// allowance (`ttl * drift_factor + 2 ms`); rw_lock asks for >= 10 ms, the watchdog for
    /// >= 3 ms. Default 30 s.
    std::chrono::milliseconds ttl{30000};
    /// Clock drift allowance as a fraction of ttl (plus 2 ms, see clock_drift()), subtracted
    /// from the validity: the holder counts its holding valid until `sent_at + ttl - drift` on
    /// its steady clock. Must be in [0, 0.5). Default 0.01 (the Redlock page's example).
    double drift_factor = 0.01;
    /// Longest single sleep of a waiter, in milliseconds, when the holder's remaining lease is
    /// unknown (no expiry known) or the release notification link is down; also how often a
    /// waiting rw_lock writer refreshes its intent. Must be > 0. Default 500 ms.
    std::chrono::milliseconds max_retry_interval{500};
    /// Upper bound of a random extra delay, in milliseconds, added when a waiter retries
    /// without a release notification: after the holder's lease ran out, and (redlock) after a
    /// split vote and before its first retry. Zero: no jitter. Must be >= 0. Default 10 ms: the
    /// Redlock page asks this delay to desynchronise clients, which a Redlock round over N nodes
    /// (up to node_timeout long) needs more than a single-instance round trip; on one instance
    /// the path is the rare one (a holder that died or let its lease run out), where 5 ms more
    /// on average is cheap. (Before 0.2, distributed_lock used 5 ms and redlock 10 ms.)
    std::chrono::milliseconds retry_jitter{10};
    /// Upper bound of a random delay, in milliseconds, between a release notification and the
    /// waiter's retry, so waiters woken together do not all hit Redis (or split a Redlock vote)
    /// at the same instant; a waiter that has lost more releases waits less. Zero: retry at
    /// once. Must be >= 0. Default 1 ms.
    std::chrono::milliseconds wake_jitter{1};
};

/// Replicas that must acknowledge a write (Redis WAIT, https://redis.io/commands/wait/) before
/// it counts: shared by distributed_lock, fair_lock, semaphore and the election.
///
/// With `replicas` = n > 0 the write and `WAIT n timeout` go in one write on the same connection
/// (one round trip plus the replication wait). A write fewer than n replicas acknowledged within
/// `timeout` does not count: an acquisition is given back at once and counts as refused (the
/// caller tries again after `timeout`), an extension or renewal does not move the validity.
/// This closes the failover race of the Redlock page for a promoted replica that acknowledged;
/// WAIT is not consensus and counts any replica, so ask for every replica Sentinel could
/// promote: with two replicas and n = 1 a write only one of them holds is lost when the other
/// is promoted (test ElectionReplicas.WaitForFewerReplicasThanCouldBePromotedLetsTwoLeadersIn).
/// After a failover the promoted master then counts nothing until enough replicas follow it
/// again. Releases never wait.
///
/// Checked by each primitive's constructor (invalid_argument naming the field, as
/// `lock_options::replication.timeout`). Thread-safety: a plain value type.
struct replication_options {
    /// How many replicas must acknowledge. Zero (the default): the master's reply alone counts.
    std::size_t replicas = 0;
    /// How long, in milliseconds, WAIT may block for the acknowledgements (also the pause
    /// before the next attempt after an unacknowledged acquisition). Must be > 0 when replicas
    /// > 0, and below the holding's ttl (the election: below `term - drift - retry_period`);
    /// ignored when replicas == 0. It may exceed the endpoint's command_timeout: WAIT's reply is
    /// read with timeout + command_timeout. Default 100 ms.
    std::chrono::milliseconds timeout{100};
};

}  // namespace redcoord

REDCOORD_API_END
