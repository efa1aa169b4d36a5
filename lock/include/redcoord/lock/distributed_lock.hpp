#pragma once
/// @file
/// A lock on one Redis instance: `SET resource token NX PX ttl` with a fencing token
/// (the redis.io page "Distributed Locks with Redis",
/// https://redis.io/docs/manual/patterns/distributed-locks/, "Correct implementation with a
/// single instance"; https://redis.io/commands/set/ for NX PX), with Martin Kleppmann's fencing
/// tokens and the waiting and watchdog of Redisson's RLock (docs/lock.md, docs/references.md).
///
/// ## How the protected resource uses the fencing token
/// (Martin Kleppmann, "How to do distributed locking", 2016,
/// https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html)
/// A lock with a TTL cannot stop a holder that was paused (GC, SIGSTOP, swap) past its TTL
/// from still *believing* it holds the lock. Make the resource itself reject stale holders:
/// pass `acquisition.fencing_token` with every write to the resource, and have the resource
/// remember the highest token it has accepted and refuse any write carrying a lower (or, for
/// "one writer per token", an equal-from-another-writer) token. With Redis as the resource
/// this is one script: `if tonumber(GET last) < token then SET last token; do write else
/// reject end`. Tokens come from an INCR executed in the same Lua script as the SET NX, so
/// each successful acquisition of a resource gets a strictly larger token. The counter key
/// `<prefix>lock:{resource}:fence` expires `ttl` after it is created, so locking any number of
/// distinct resources leaves no key without a TTL; a counter created anew starts at the
/// server's clock (TIME) in microseconds, which exceeds every token of its earlier life, so
/// tokens keep increasing across its expiry (below 2^53, exact in Lua, until the year 2255).
///
/// Caveats (the counter lives in Redis): a server clock set back while the counter is absent,
/// `allkeys-*` eviction of a live counter, or an asynchronous failover that loses the last
/// INCR (replicas = 0) can repeat a token; use `noeviction`/`volatile-*` and
/// `lock_options::replication.replicas >= 1` when the resource relies on tokens for safety.
///
/// ## std::condition_variable_any
/// Its wait() re-locks through lock(), which returns only with the lock held: transient
/// faults are waited out, so the re-lock neither returns without the lock nor throws for an
/// outage. Errors retrying cannot cure (auth_error, reply_error, protocol_error) still
/// propagate: libstdc++ lets them escape wait() (with the unique_lock claiming ownership, but
/// unlock() is then a no-op), while the standard and libc++ call std::terminate.

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
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>

REDCOORD_API_BEGIN
namespace redcoord {

/// Options of a distributed_lock.
struct lock_options {
    /// Lease length, drift allowance and waiting (core/options.hpp): `ttl` is the key's PX;
    /// `retry_jitter` is added when a waiter retries because the holder's PTTL ran out (not on
    /// release notifications, which wake it after at most `wake_jitter`); `max_retry_interval`
    /// bounds a sleep when the holder's PTTL is unknown (no expiry on the key) or the
    /// notification link is down.
    lock_timing timing;
    /// Bounded unfairness: how long, in milliseconds, a holder that re-acquires as soon as it
    /// releases may keep the lock while other clients wait (its turn). The lock is not FIFO
    /// (that is fair_lock): within its turn a holder that locks again usually wins, as with
    /// std::mutex, which keeps a busy lock fast. Once the turn is over and someone waits, the
    /// holder's next acquire yields: the lock goes to a waiter (woken by the release; those
    /// that have lost more releases retry sooner), whose own turn starts then. Waiters sleep
    /// through a holder's turn instead of waking on each of its releases. A waiter that dies
    /// holds the lock up for at most 50 ms (the grace its entry lives after its last attempt).
    /// Zero: hand over at every release someone waits for (slowest, fairest). Must be >= 0.
    /// Default 10 ms. The mechanism (two small keys next to the lock key, `...:turn` and
    /// `...:waiting`) is described in the README's lock section.
    std::chrono::milliseconds handoff_after{10};
    /// Opt-in (default off): a loop of short sections costs one command per section instead
    /// of two. When this object's lock() calls come within 200 us of its unlock() calls,
    /// unlock() holds the release back for up to 5 ms and the next lock() renews the key in
    /// place (a new token and fencing token all the same). The price: while a release is held
    /// back the key stays in Redis, so others see the lock free up to 5 ms later, and a
    /// process that dies (SIGKILL, crash, `_exit`) in that window leaves the lock held until
    /// its TTL. Off, every unlock() writes its release before it returns, so a crash right
    /// after it costs nothing. Measured: `./scripts/bench lock`.
    bool defer_release = false;
    /// Opt-in watchdog: while held, the runtime's timer thread extends the lock to `ttl` every
    /// ttl/3 (Redisson's lock watchdog). An extension that cannot be confirmed (reply
    /// lost, server unreachable, replicas not acknowledging) is retried while the validity
    /// lasts; when the validity ends unextended (or an extension finds the key gone or
    /// someone else's) lost() becomes true and the loss callback fires, before the key can
    /// expire in Redis (the validity ends ttl * drift_factor + 2 ms before the key does).
    /// Pool sizing: one lock object uses at most one pooled connection per node at a time,
    /// plus one for the watchdog's extension, so the watchdog needs pools of max_size >= 2
    /// (checked); give a pool max_size >= 2 x the lock objects active on it at once and the
    /// locks cannot exhaust it. A full pool is never taken for a node that is down.
    bool watchdog = false;
    /// Most confirmed extensions per acquisition (watchdog and extend() together). Default:
    /// no bound, so a holder that lives keeps its lock for hours, as with Redisson. With a
    /// bound, a watchdog that has used it up stops extending and the end of the validity is
    /// reported as a loss (lost() and the callback), so a runaway holder is capped and told.
    /// Zero: extend() always returns false. Must be > 0 when `watchdog` is on.
    std::size_t max_extensions = std::numeric_limits<std::size_t>::max();
    /// Replicas that must acknowledge an acquisition (Redis WAIT, core/options.hpp); none by
    /// default. With replicas = n > 0 the acquire script and `WAIT n timeout` go in one write;
    /// when fewer than n replicas acknowledged, the key is released at once (compare-and-delete,
    /// no release notification) and that attempt counts as not acquired: acquire() retries
    /// until its wait runs out and then returns nullopt, try_lock() returns false. Extensions
    /// wait the same way: one that fewer than n replicas acknowledged does not move the local
    /// validity (extend() returns false, lost() stays false until the old validity ends).
    /// Releases do not wait. A consumed fencing token of a released attempt is simply skipped
    /// (tokens still increase). `replication.timeout` must be below `timing.ttl`.
    replication_options replication;
    /// Key prefix; keys are `<prefix>lock:{<resource>}` and `...:fence`, the channel is
    /// `<prefix>lock:{<resource>}:released`. The lock key holds the holder's token and nothing
    /// else (a holder of another client's standard SET NX PX / compare-and-delete lock can
    /// share the resource); a waiter asks for a release notice in `...:notice`.
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

/// A mutual-exclusion lock on one Redis instance, usable as a C++ *Lockable* /
/// *TimedLockable* (std::unique_lock, std::scoped_lock, std::condition_variable_any).
///
/// One object is one holder at a time: threads of this process that share the object are
/// serialised locally first (like std::mutex) and only then compete with other processes in
/// Redis. The object is not recursive: locking it again from the thread that holds it throws
/// invalid_argument instead of dead-locking.
///
/// @par Cost
/// Acquire and release are one EVALSHA round trip each (EVAL the first time on a
/// connection; with lock_options::replication, acquire also waits for the replicas'
/// acknowledgements in the same round trip). unlock() does not wait for its reply: the
/// release is written and the connection's next command reads past its answer, so a holder
/// that locks again pipelines both. A waiter does not poll a held lock: it listens for the
/// release on the lock's channel through its pool's runtime (one shared pub/sub link per
/// endpoint; the object owns no thread and no connection of its own) and otherwise sleeps
/// until the holder's PTTL runs out. Only a lock someone waits for publishes on release, so
/// an uncontended lock never pays for a PUBLISH. Fairness is bounded, not FIFO: a holder that
/// re-acquires at once keeps the lock for at most handoff_after while others wait, then hands
/// it to a waiter, so no waiter starves and a busy lock still runs mostly at its holder's
/// speed (for strict request order use fair_lock). The waiting policy is described in
/// lock/src/wait_policy.hpp.
///
/// @par Thread safety
/// All members may be called from any thread. The loss callback runs on the runtime's
/// callback executor, through a strand of this object (never on the timer thread that finds
/// the loss, nor on the thread calling extend()): shortly after lost() turns true, in order,
/// and a slow slot delays only this object's later callbacks. It must not call back into this
/// object's blocking functions nor destroy it.
///
/// @par Errors
/// acquire(), lock() and the try_ forms throw connection_error, timeout_error, pool_exhausted or
/// reply_error when Redis cannot answer (lock() waits transient faults out and throws only
/// auth_error, reply_error or protocol_error), and invalid_argument when the calling thread already
/// holds the object; release() and extend() throw outcome_unknown for a lost reply; unlock() and
/// the destructor never throw; fencing_token() and check_held() throw lock_lost when the lock is
/// not held.
class distributed_lock {
public:
    /// A callback for on_lost(): gets the resource name.
    using lost_slot = std::function<void(const std::string& resource)>;

    /// Makes a lock on `resource` over `pool` (which must outlive the object).
    /// Nothing is sent until the first acquisition.
    /// @throws invalid_argument for a bad resource name (see validate_name) or options.
    distributed_lock(connection_pool& pool, std::string resource, lock_options opts = {});
    /// Releases the lock if held (best effort, errors swallowed), stops the watchdog and the
    /// release listener. Never throws; bounded by the command and connect timeouts.
    ~distributed_lock();
    distributed_lock(const distributed_lock&) = delete;
    distributed_lock& operator=(const distributed_lock&) = delete;

    /// Tries to acquire, waiting up to `wait` (milliseconds; zero: one attempt).
    /// @return the acquisition, or nullopt when the wait passed without it.
    /// @throws connection_error, timeout_error, pool_exhausted, reply_error when Redis cannot
    ///         be asked (an acquisition whose reply was lost simply expires after ttl);
    /// @throws invalid_argument when the calling thread already holds this object.
    [[nodiscard]] std::optional<lock_acquisition> acquire(std::chrono::milliseconds wait);

    /// Extends the lock to `ttl` from now (compare-and-pexpire); validity becomes
    /// `now + ttl - drift`.
    /// @return true when extended; false when the lock is not held by this object, was lost
    ///         (the key no longer holds our token: lost() becomes true and the callback
    ///         fires), or the max_extensions budget is used up.
    /// @throws outcome_unknown when the request was sent but its reply was lost;
    /// @throws connection_error / pool_exhausted when it could not be sent.
    [[nodiscard]] bool extend(std::chrono::milliseconds ttl);
    /// Same, with the configured ttl.
    [[nodiscard]] bool extend();

    /// Releases (compare-and-delete; publishes on the lock's channel when a waiter asked for
    /// the release notice) and waits for the answer. Local state is cleared whatever happens.
    /// @return true when the key still held our token and was deleted; false when the lock
    ///         was not held or no longer ours (nothing was deleted).
    /// @throws outcome_unknown when the request was sent but its reply was lost;
    /// @throws connection_error / pool_exhausted when it could not be sent.
    bool release();

    /// True when the current holding can no longer be trusted: an extension found the key
    /// gone or someone else's, or the validity passed without extension. False when not held.
    [[nodiscard]] bool lost() const;
    /// True while this object holds the lock (even if lost() since; call release()).
    [[nodiscard]] bool held() const;
    /// The current acquisition (token, validity, fencing token), or nullopt when not held.
    [[nodiscard]] std::optional<lock_acquisition> current() const;
    /// The fencing token of the current acquisition. @throws lock_lost when not held.
    [[nodiscard]] std::uint64_t fencing_token() const;
    /// @throws lock_lost when not held or lost(); for code that must not go on without it.
    void check_held() const;

    /// Calls `slot` once per holding that is found lost (just after lost() turns true), until the
    /// returned connection is disconnected or destroyed: dropping it disconnects at once, so keep
    /// it for as long as the slot should run. Thread: the runtime's callback executor, through
    /// this object's strand, whether the watchdog, the end of an unextended validity or extend()
    /// found the loss (extend() may return before the slot runs); never the timer thread, so a
    /// slow slot delays only this object's later callbacks. Order: the slots run one after
    /// another in connection order; a slot connected after the loss was found may or may not
    /// be called for it. Disconnecting does not wait for a call already
    /// running. An exception from a slot is swallowed (it skips the later slots of that loss). The
    /// slot must not call this object's blocking functions nor destroy it.
    [[nodiscard]] boost::signals2::scoped_connection on_lost(lost_slot slot);

    /// Lockable: blocks until acquired, and returns only with the lock held (retry_count
    /// does not apply). Transient faults (server down or restarting, no majority reachable,
    /// a busy pool, a lost reply) are ridden through with a growing pause up to
    /// max_retry_interval, so std::lock_guard, std::unique_lock and a
    /// std::condition_variable_any re-lock never run a section without the lock; bound the
    /// wait with try_lock_for() instead when Redis may stay away.
    /// @throws auth_error, reply_error, protocol_error for faults that retrying cannot cure
    ///         (bad credentials, a refused script, a peer that is not Redis);
    /// @throws invalid_argument when the calling thread already holds this object.
    void lock();
    /// Lockable: one attempt, no waiting. @throws as acquire().
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
    /// Lockable: releases without waiting for Redis's answer. The compare-and-delete is
    /// written to the connection before unlock() returns (other clients see the lock free
    /// as soon as Redis reads it, as with release()); its reply is read and discarded by that
    /// connection's next command; it travels as EVAL, so it runs even if no later command
    /// reads that connection (a SCRIPT FLUSH cannot refuse it). A process that dies right
    /// after unlock() returned therefore leaves the lock free. With lock_options::defer_release
    /// (opt-in), in a loop of short sections (this object's lock() calls within 200 us of its
    /// unlock() calls) unlock() holds the release back for up to 5 ms, and the next lock()
    /// renews the key in place (one command for unlock + lock instead of two; a new token and
    /// fencing token all the same; if its turn is over and others wait, that call releases
    /// and yields instead). A release held back goes out when due, or when the object is
    /// destroyed; while held back the key stays in Redis (others see the lock free at most
    /// 5 ms later than they would, and a process that dies meanwhile keeps it until its
    /// TTL). Never throws: a lost
    /// lock is reported by lost() and the callback before, and release() (never held back)
    /// is there for callers that want the answer. A command this process sends on another
    /// connection right after unlock() may reach Redis before the release. On a Redis
    /// Cluster unlock() does wait for the reply (one round trip), so that a release whose
    /// slot moved follows the MOVED or ASK to the slot's new owner (script::send).
    void unlock() noexcept;

    /// The resource name.
    [[nodiscard]] const std::string& resource() const noexcept;
    /// The lock key in Redis.
    [[nodiscard]] const std::string& key() const noexcept;

private:
    friend struct detail::lock_access;
    std::optional<lock_acquisition> acquire_until(std::chrono::steady_clock::time_point deadline);
    struct impl;
    std::unique_ptr<impl> impl_;
};

}  // namespace redcoord

REDCOORD_API_END
