#pragma once
/// @file
/// Redlock: one lock over N independent Redis masters (the redis.io page "Distributed Locks
/// with Redis", https://redis.io/docs/manual/patterns/distributed-locks/, section "The
/// Redlock algorithm"; docs/lock.md).
///
/// Steps, as on the page: (1) take the steady-clock time; (2) send `SET key token NX PX ttl`
/// (with the fencing INCR, in one script) to all N nodes at once through core fan-out, each
/// node bounded by `node_timeout`, deciding as soon as a majority has answered either way;
/// (3) the lock is acquired iff at least N/2+1 nodes said OK and the validity
/// `ttl - elapsed - drift` (drift = ttl * drift_factor + 2 ms) is still positive; (4) the
/// validity is that value; (5) otherwise unlock at once every node that may hold the key,
/// including those believed not locked (no reply, a reply too late, an error; only a node that
/// answered "held by another" is known not to), and retry after a random delay. A node that is
/// down, hung, still connecting or answers with an error counts as a "no": it never throws and
/// never costs more than `node_timeout` per round (a connect that needs longer goes on in the
/// background).
///
/// ## Fencing under Redlock — read this before relying on it
/// Each node keeps its own INCR counter; fencing_token() is the maximum over the nodes that
/// granted the acquisition, and a release raises each reached node's counter to at least the
/// released token unless a majority of nodes already stands at it, so after clean releases
/// the next holder's token is strictly larger (any two majorities share a node). This is best effort, not a guarantee: if a holder
/// crashes without releasing and later acquisitions reach different majorities, or nodes
/// restart without persistence, the maximum can go backwards. A quorum of independent
/// counters cannot produce a sound fencing token; that needs consensus (Martin Kleppmann, "How to do
/// distributed locking", 2016, https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html).
/// Use distributed_lock (one instance, one counter) or a consensus system when the resource
/// must rely on fencing for safety; here a resource should still reject lower tokens.
///
/// ## Restarted nodes
/// A node that restarts without persistence forgets the keys it held; the page's remedy is
/// to keep it down for at least the max TTL (delayed restart) or to run with
/// `appendfsync always`. This class cannot detect it.

#include <redcoord/core/deadline.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/core/holder_label.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/core/options.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/lock/acquisition.hpp>
#include <redcoord/lock/errors.hpp>
#include <redcoord/lock/node_outcome.hpp>

#include <boost/signals2/connection.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord {

/// Options of a redlock.
struct redlock_options {
    /// Lease length, drift allowance and waiting (core/options.hpp): `ttl` is each key's PX;
    /// `retry_jitter` is added to retry_delay, to the holder's PTTL and before the first retry
    /// (the Redlock page's step 5: desynchronises clients); `wake_jitter` spreads the retries
    /// after a release notification, so waiters woken together do not split the vote;
    /// `max_retry_interval` bounds a sleep while another client holds a majority but its PTTL
    /// is unknown or no notification link is up.
    lock_timing timing;
    /// Per-node deadline of one acquire/extend/release round, in milliseconds (all nodes
    /// share it: the round never takes longer). Must be > 0. Default 50 ms (the Redlock page
    /// suggests 5-50 ms for a 10 s TTL). Release rounds share it: when many threads of a
    /// process release at once, some nodes' answers may come after it (release() throws
    /// outcome_unknown, and a key whose release did not reach its node expires after the TTL,
    /// keeping the next holder out until then). Measured: 1,000 threads releasing at once on
    /// 2 cores, 2-7 of 1,000 releases had 1-3 nodes answer after 50 ms; give such processes
    /// a larger node_timeout.
    std::chrono::milliseconds node_timeout{50};
    /// Most attempts of one acquire(wait) / try_lock_for call (the first included); zero: as
    /// many as the wait allows. lock() ignores it: it returns only with the lock held.
    /// Default 0.
    std::size_t retry_count = 0;
    /// Base delay, in milliseconds, before retrying after an attempt in which no single other
    /// client held a majority (split vote, stale minority keys, failing nodes); a release
    /// notification cuts it short. Must be > 0. Default 5 ms.
    std::chrono::milliseconds retry_delay{5};
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
    /// Opt-in watchdog: extends at ttl/3 while held. An extension that does not reach a
    /// majority because nodes are slow, unreachable or this process's pools are busy is
    /// retried while the validity lasts; when the validity ends unextended, or a majority
    /// says the keys are no longer ours, lost() becomes true and the loss callback fires,
    /// before the keys can expire.
    /// Pool sizing: one lock object uses at most one pooled connection per node at a time,
    /// plus one for the watchdog's extension, so the watchdog needs pools of max_size >= 2
    /// (checked); give a pool max_size >= 2 x the lock objects active on it at once and the
    /// locks cannot exhaust it. A full pool is never taken for a node that is down.
    bool watchdog = false;
    /// Most confirmed extensions per acquisition (watchdog and extend() together). Default:
    /// no bound (a living holder keeps its lock). With a bound, the end of the validity after
    /// the last extension is reported as a loss. Zero: none. Must be > 0 when `watchdog` is on.
    std::size_t max_extensions = std::numeric_limits<std::size_t>::max();
    /// Key prefix (same key layout as distributed_lock).
    std::string prefix{default_prefix};
    /// Holder label carried in each holding's token (core/holder_label.hpp), shown by
    /// `inspect`, the dashboard and the CLI: nullopt (the default) gives `<host>:<pid>`, an
    /// empty string none. At most max_holder_label bytes, no CR, LF or NUL (invalid_argument
    /// from the constructor). Informative only: ownership is the whole token.
    std::optional<std::string> label;
    /// Log sink, optional: called on the acquiring thread when an attempt found no majority
    /// reachable and the call waits for nodes to come back (lock(), or acquire() with time
    /// left), with what it waits for (counts of down and slow nodes and one node's error; no
    /// password). Called when that changes and at most once a second while it stays the
    /// same; last_outcomes() has the per-node detail. Must not call back into the lock; an
    /// exception it throws is ignored.
    std::function<void(const std::string& what)> on_wait;
};

namespace detail {
struct lock_access;
}  // namespace detail

/// A Redlock over N independent masters, usable as a C++ *Lockable* / *TimedLockable*.
///
/// One object is one holder at a time (threads sharing it are serialised locally, as with
/// std::mutex; not recursive). Each round encodes its command once for all nodes, sends it to
/// every node at once and is decided as soon as a majority has answered either way (EVALSHA,
/// EVAL the first time on a connection and again on a node that answers NOSCRIPT). A waiter
/// does not poll: when one other client holds a majority it sleeps until that holding's
/// release notification (heard on a random majority of the nodes through the runtime's shared
/// pub/sub links, which suffices because any holder needs a majority too) or until its PTTL
/// runs out; after a split vote it retries after retry_delay + jitter. Only a holding someone
/// waits for publishes on release. Fairness is bounded as for distributed_lock: a holder that
/// re-acquires at once keeps the lock for at most handoff_after while others wait (each node
/// keeps the turn). The waiting policy is described in lock/src/wait_policy.hpp.
///
/// @par Thread safety
/// All members may be called from any thread. The loss callback runs on the runtime's
/// callback executor, through a strand of this object (never on the timer thread that finds
/// the loss, nor on the thread calling extend()): shortly after lost() turns true, in order,
/// and a slow slot delays only this object's later callbacks. It must not call back into this
/// object's blocking functions nor destroy it.
///
/// @par Errors
/// acquire() and the try_ forms throw quorum_unreachable when no majority of nodes can be reached
/// (at once without a wait, when the wait ends otherwise), auth_error, reply_error or
/// protocol_error for faults retrying cannot cure, and invalid_argument when the calling thread
/// already holds the object; release() throws outcome_unknown when too few nodes answered to tell;
/// unlock() and the destructor never throw; fencing_token() and check_held() throw lock_lost when
/// not held.
///
/// @par Cost
/// Every round (acquire, extend, release) is one EVALSHA sent to all N nodes at once and decided
/// when a majority has answered: one round trip of the slowest node of that majority, bounded by
/// node_timeout. A waiter listens for release notifications on a majority of the nodes (shared
/// pub/sub links) instead of polling.
class redlock {
public:
    /// A callback for on_lost(): gets the resource name.
    using lost_slot = std::function<void(const std::string& resource)>;

    /// Makes a lock on `resource` over `nodes` (N independent masters; each pool must
    /// outlive the object; N >= 1, odd N recommended).
    /// @throws invalid_argument for no nodes, a null or duplicate pool, a bad name or options.
    redlock(std::vector<connection_pool*> nodes, std::string resource, redlock_options opts = {});
    /// Releases if held (best effort), stops the watchdog and the release listeners. Never throws.
    ~redlock();
    redlock(const redlock&) = delete;
    redlock& operator=(const redlock&) = delete;

    /// Tries to acquire within `wait` (milliseconds; zero: one attempt). A round bounds every
    /// node by node_timeout; a node without a connection gets one from its pool, whose
    /// connect runs in the background within the endpoint's connect_timeout: a connect that
    /// outlasts the round leaves the node `connecting` (slow, not down) for that round and
    /// serves the next one, so fresh pools on a loaded host cost a retry, not the lock.
    /// @return the acquisition (fencing_token as described in the file comment), or nullopt
    ///         when the wait (or retry_count) ran out while the resource was held elsewhere.
    /// @throws quorum_unreachable when no majority could be reached: at once for a zero
    ///         wait (after unlocking the nodes it reached); with a wait, only once the wait
    ///         (or retry_count) is over and the last attempt still found no majority
    ///         reachable. Meanwhile the call retries: after a split-vote delay when the
    ///         failing nodes were only slow (no reply within node_timeout, still connecting:
    ///         each round costs node_timeout), with a pause growing from retry_delay to
    ///         max_retry_interval when a majority is down (refused, reset or erroring), and
    ///         tells on_wait what it waits for. lock() waits the same way without a deadline.
    /// @throws invalid_argument when the calling thread already holds this object.
    [[nodiscard]] std::optional<lock_acquisition> acquire(std::chrono::milliseconds wait);

    /// Extends on every node at once (compare-and-pexpire); succeeds iff a majority did so
    /// before the current validity ran out, and the new validity `ttl - elapsed - drift` is
    /// positive; counts against max_extensions.
    /// @return false when not held, the budget is spent, or the extension failed (then
    ///         lost() is true and the callback fired). Never throws for node failures.
    [[nodiscard]] bool extend(std::chrono::milliseconds ttl);
    /// Same, with the configured ttl.
    [[nodiscard]] bool extend();

    /// Unlocks every node at once (compare-and-delete; publishes where a waiter asked for the
    /// release notice; raises each node's fencing counter to the released token unless a majority of
    /// nodes already granted exactly that token, in which case every later majority includes
    /// one of them and the raise would change nothing). Local state is cleared anyway.
    /// @return true when a majority deleted our key; false when not held or a majority no
    ///         longer had our key (nothing of anyone else's was deleted).
    /// @throws outcome_unknown when too few nodes answered to tell.
    bool release();

    /// True when the current holding can no longer be trusted (failed extension or validity
    /// passed). False when not held.
    [[nodiscard]] bool lost() const;
    /// True while this object holds the lock.
    [[nodiscard]] bool held() const;
    /// The current acquisition, or nullopt.
    [[nodiscard]] std::optional<lock_acquisition> current() const;
    /// Best-effort fencing token of the current acquisition (see file comment).
    /// @throws lock_lost when not held.
    [[nodiscard]] std::uint64_t fencing_token() const;
    /// @throws lock_lost when not held or lost().
    void check_held() const;
    /// Per-node outcomes of the last acquire/extend/release round, in node order.
    [[nodiscard]] std::vector<node_outcome> last_outcomes() const;

    /// Calls `slot` once per holding that is found lost, until the returned connection is
    /// disconnected or destroyed; same thread, order and rules as distributed_lock::on_lost()
    /// (the runtime's callback executor, through this object's strand, never the timer thread).
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
    /// Lockable: one attempt. @throws as acquire().
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
    /// Lockable: sends the release to every node (connecting where needed, within
    /// node_timeout) and returns without waiting for the answers, which each connection's
    /// next command reads past; a holder that locks again pipelines both. With
    /// redlock_options::defer_release (opt-in), in a loop of short sections (lock() within
    /// 200 us of unlock()) the release is held back for up to 5 ms and renewed in place by the
    /// next lock() on every node, as distributed_lock::unlock() describes. Never throws; use
    /// release() for the answer.
    void unlock() noexcept;

    /// The resource name, as given.
    [[nodiscard]] const std::string& resource() const noexcept;
    /// The lock's key on every node, `<prefix>lock:{<resource>}`.
    [[nodiscard]] const std::string& key() const noexcept;
    /// Number of nodes N.
    [[nodiscard]] std::size_t size() const noexcept;

private:
    friend struct detail::lock_access;
    std::optional<lock_acquisition> acquire_until(std::chrono::steady_clock::time_point deadline);
    struct impl;
    std::unique_ptr<impl> impl_;
};

}  // namespace redcoord

REDCOORD_API_END
