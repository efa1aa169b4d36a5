#pragma once
/// @file
/// A read-write lock on Redis (`std::shared_mutex`-like): many readers or one writer per name,
/// each holding its own lease, with writer preference, fencing tokens, an opt-in watchdog and
/// loss callbacks (Redisson's `RReadWriteLock`, Curator's `InterProcessReadWriteLock`).
///
/// ## How it works
/// Readers are one sorted set, `<prefix>rwlock:{<name>}`: one member per share, scored by the
/// server time its lease ends; the writer is the key `...:writer` holding its token and
/// expiring with its lease. Every script first drops the leases that ended (on the server's
/// clock), so a reader or writer that dies (SIGKILL, crash, partition) gives its hold back
/// when its TTL ends. A share is granted while no writer holds and no writer waits; the
/// exclusive hold while no writer and no live reader holds. Each acquisition, share or
/// exclusive, takes a fencing token from `...:fence` by the rule the locks and the semaphore
/// use (INCR; a counter created anew starts at the server's TIME in microseconds), so tokens
/// strictly increase per name across both modes.
///
/// ## Writer preference
/// A writer that is refused and waits registers an intent in `...:writers` (a sorted set of
/// waiter ids); while any intent is live, new shares are refused, so a stream of readers
/// cannot starve a writer: the readers that hold finish (or their leases end) and the writer
/// gets in. The intent lives one sleep of the writer (at most `timing.max_retry_interval`) plus
/// 500 ms, and the waiting writer refreshes it at every attempt; a waiting writer that dies
/// therefore holds readers back for at most `timing.max_retry_interval` + 500 ms, after which its
/// intent lapses and readers are admitted again. A timed wait that gives up withdraws its
/// intent at once. Among writers the order is not FIFO.
///
/// ## Waiting
/// Refused callers that wait queue their ids (`...:writers`, `...:waiting`); while either
/// exists, releases publish on `...:released`, and waiters listen through the runtime's
/// shared pub/sub link. A waiter also wakes when the lease it waits for would end (a lease
/// that ends publishes nothing), and a waiting writer at least every `timing.max_retry_interval` to
/// refresh its intent. No polling otherwise; an uncontended lock never publishes.

#include <redcoord/core/deadline.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/core/holder_label.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/core/options.hpp>
#include <redcoord/core/pool.hpp>

#include <boost/signals2/connection.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

REDCOORD_API_BEGIN
namespace redcoord {

/// Options of an rw_lock.
struct rw_lock_options {
    /// Lease length, drift allowance and waiting (core/options.hpp): `ttl` is each hold's
    /// lease (a share's or the exclusive hold's; one not released or extended within it ends),
    /// here >= 10 ms; `max_retry_interval` is how often a waiting writer refreshes its intent
    /// and how long a reader sleeps when no lease end is known or the pub/sub link is down.
    /// `retry_jitter` adds up to that much to a sleep until a known
    /// lease end, so the waiters of one lease do not all ask at once; `wake_jitter` is not used
    /// (a release notice wakes the waiters at once).
    lock_timing timing;
    /// Opt-in watchdog: while a hold lasts, the runtime's timer thread extends its lease to
    /// `ttl` every ttl/3; a hold whose extension finds its lease ended, or whose validity ends
    /// unextended, is lost (lost(), on_lost()). Off: the holder extends (extend()) or
    /// finishes within ttl.
    bool watchdog = false;
    /// Key prefix; keys are `<prefix>rwlock:{<name>}` (readers), `...:writer`, `...:fence`,
    /// `...:writers` (waiting writers' intents), `...:waiting` (waiting readers), the channel
    /// `...:released`.
    std::string prefix{default_prefix};
    /// Holder label carried in each holding's token (core/holder_label.hpp), shown by
    /// `inspect`, the dashboard and the CLI: nullopt (the default) gives `<host>:<pid>`, an
    /// empty string none. At most max_holder_label bytes, no CR, LF or NUL (invalid_argument
    /// from the constructor). Informative only: ownership is the whole token.
    std::optional<std::string> label;
};

namespace detail {
struct rw_lock_access;
}  // namespace detail

/// Many readers or one writer on a name, shared by every client using the name (see the
/// file comment). Meets *SharedTimedLockable*: `std::unique_lock<rw_lock>` takes the
/// exclusive hold, `std::shared_lock<rw_lock>` a share.
///
/// One object may hold the exclusive hold (one thread at a time, as a `std::shared_mutex`)
/// or any number of shares (one per lock_shared() call, from any threads). Each hold is its
/// own lease with its own fencing token. The validity of a hold is `sent_at + ttl - drift`
/// on the runtime's clock (runtime_clock: the steady clock unless a test advanced it; drift =
/// `ttl * drift_factor + 2 ms`, as for the locks), so it ends before
/// the lease does in Redis.
///
/// @par Thread safety
/// Every member may be called from any thread at once. Not recursive, and no upgrade: lock()
/// or lock_shared() from the thread that holds this object's exclusive hold, and lock() from
/// a thread that holds a share of it, throw invalid_argument (they would wait for
/// themselves).
///
/// @par Errors
/// The acquire functions throw connection_error, timeout_error, pool_exhausted or
/// reply_error when Redis cannot answer. unlock() and unlock_shared() never throw for I/O
/// (a release whose reply is lost leaves the lease to end by its TTL), so the standard lock
/// guards may call them from destructors.
///
/// @par Cost
/// An attempt is one EVALSHA round trip, a release one more (and a PUBLISH only while
/// someone waits).
class rw_lock {
public:
    /// A callback for on_lost(): gets the name.
    using lost_slot = std::function<void(const std::string& name)>;

    /// An rw_lock on `name` over `pool` (which must outlive it). Nothing is sent here.
    /// @throws invalid_argument for a bad name (see validate_name; a `}` anywhere is refused
    /// too) or bad options (see rw_lock_options).
    rw_lock(connection_pool& pool, std::string name, rw_lock_options opts = {});
    /// Releases every hold of this object (best effort, never throws).
    ~rw_lock();
    rw_lock(const rw_lock&) = delete;
    rw_lock& operator=(const rw_lock&) = delete;

    /// Blocks until the exclusive hold is taken.
    void lock();
    /// One attempt at the exclusive hold, no waiting (registers no intent).
    [[nodiscard]] bool try_lock();
    /// Waits up to `d` for the exclusive hold (registering an intent that stops new readers).
    template <class Rep, class Period>
    [[nodiscard]] bool try_lock_for(const std::chrono::duration<Rep, Period>& d) {
        return lock_until(deadline_after(d));
    }
    /// Waits until `tp` (any clock; converted to steady time once) for the exclusive hold.
    template <class Clock, class Duration>
    [[nodiscard]] bool try_lock_until(const std::chrono::time_point<Clock, Duration>& tp) {
        return lock_until(deadline_after(tp - Clock::now()));
    }
    /// Releases the exclusive hold. @throws invalid_argument when this object does not hold
    /// it (never from std::unique_lock, which unlocks only what it owns).
    void unlock();

    /// Blocks until a share is taken.
    void lock_shared();
    /// One attempt at a share, no waiting.
    [[nodiscard]] bool try_lock_shared();
    /// Waits up to `d` for a share.
    template <class Rep, class Period>
    [[nodiscard]] bool try_lock_shared_for(const std::chrono::duration<Rep, Period>& d) {
        return lock_shared_until(deadline_after(d));
    }
    /// Waits until `tp` (any clock) for a share.
    template <class Clock, class Duration>
    [[nodiscard]] bool try_lock_shared_until(const std::chrono::time_point<Clock, Duration>& tp) {
        return lock_shared_until(deadline_after(tp - Clock::now()));
    }
    /// Releases one share of this object: the calling thread's latest if it took one, else
    /// the latest taken. @throws invalid_argument when this object holds no share.
    void unlock_shared();

    /// True while this object holds the exclusive hold (until unlock(), even if lost()).
    [[nodiscard]] bool owns_lock() const;
    /// How many shares this object holds.
    [[nodiscard]] std::size_t shared_count() const;
    /// The fencing token of the exclusive hold; 0 when not held. Strictly larger than every
    /// earlier acquisition's on the name, share or exclusive.
    [[nodiscard]] std::uint64_t fencing_token() const;
    /// The fencing token of the calling thread's latest share, else of the latest share; 0
    /// when no share is held.
    [[nodiscard]] std::uint64_t shared_fencing_token() const;
    /// The earliest instant (on the runtime's clock) until which every hold of this object may be trusted
    /// as held (a default time_point when it holds nothing).
    [[nodiscard]] std::chrono::steady_clock::time_point valid_until() const;
    /// True when a hold of this object can no longer be trusted: an extension found its lease
    /// ended, or its validity passed without extension.
    [[nodiscard]] bool lost() const;
    /// Extends every hold of this object to `ttl` (milliseconds, >= 10) from now.
    /// @return true when all were extended; false when one was lost (it stays held until
    /// unlocked, and lost() is true). @throws invalid_argument for a bad ttl;
    /// connection_error, timeout_error or pool_exhausted when Redis cannot answer.
    bool extend(std::chrono::milliseconds ttl);
    /// Same, with the options' ttl.
    bool extend();
    /// Connects `slot`, called once per lost hold (name as argument) on the runtime's
    /// callback executor, through a strand of this object (never on the timer thread that
    /// finds the loss). Holds taken while a slot is connected (or held when it connects) are
    /// watched until their validity ends even without the watchdog. A throwing slot does not
    /// stop the others. Disconnected when the returned connection is destroyed.
    [[nodiscard]] boost::signals2::scoped_connection on_lost(const lost_slot& slot);

    /// The name given at construction.
    [[nodiscard]] const std::string& name() const noexcept;
    /// The options given at construction.
    [[nodiscard]] const rw_lock_options& options() const noexcept;

    struct impl;

private:
    friend struct detail::rw_lock_access;
    bool lock_until(std::chrono::steady_clock::time_point deadline);
    bool lock_shared_until(std::chrono::steady_clock::time_point deadline);
    std::unique_ptr<impl> impl_;
};

}  // namespace redcoord

REDCOORD_API_END
