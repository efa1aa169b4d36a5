#pragma once
/// @file
/// A counting semaphore on Redis whose permits expire: N permits per name, each acquired
/// permit a lease with its own TTL, so a holder that dies (SIGKILL, crash, partition) gives
/// its permits back when their TTL ends instead of leaking them (Redisson's
/// `RPermitExpirableSemaphore`, the "fair semaphore" of Redis in Action §6.3, with the
/// locks' fencing tokens and release notifications).
///
/// ## How it works
/// The holders are one sorted set, `<prefix>semaphore:{<name>}`: one member per held permit,
/// scored by the server time its lease ends. Every script first drops the leases that ended
/// (on the server's clock, TIME inside the script), then counts; an acquisition of n permits
/// adds n members at once or none. Each acquisition takes a fencing token from the counter
/// `...:fence`, by the rule the locks use (INCR; a counter created anew starts at the
/// server's TIME in microseconds), so tokens strictly increase per name. A refused caller
/// that will wait queues in `...:waiting` (a sorted set of waiter ids), and while it exists
/// each release publishes on `...:released`; waiters listen through the runtime's shared
/// pub/sub link and otherwise sleep until the lease they wait for would end. An uncontended
/// semaphore never publishes.
///
/// ## Order
/// No barging: a caller that is not queued (try_acquire(), or the first attempt of a wait)
/// is admitted only if the free permits leave one for each queued waiter, so a holder that
/// releases and asks again at once does not beat the waiters its release woke. Among queued
/// waiters the order is not FIFO (whoever the release wakes first). A waiter's entry lives as
/// long as it sleeps plus 500 ms; a waiter that died holds newcomers back no longer than
/// that, and a timed wait that gives up leaves the queue at once.
///
/// With semaphore_options::fifo, waiters also join the list `...:queue` in arrival order and
/// permits go to its head only (fair_lock's queue, with the same rule for dead waiters: one
/// whose entry lapsed is dropped when it reaches the head, core/detail/queue_lua.hpp). Strict
/// order: a head that asks for more permits than are free holds back those behind it, even
/// ones that would fit. Every object on a name must agree on `fifo`.
///
/// ## Replicas
/// With semaphore_options::replication.replicas = r > 0, each acquisition and extension is
/// followed by `WAIT r timeout` in the same write (one round trip plus the replication wait), as
/// lock_options::replication does: an acquisition fewer than r replicas acknowledged is given
/// back at once and counts as refused (a waiter tries again after the timeout; in fifo
/// order it queues again at the back), and such an extension does not move the validity
/// (permit::extend() returns false; the watchdog retries while the validity lasts). A
/// failover to a replica that acknowledged keeps every permit that counted. WAIT is not
/// consensus: ask for as many replicas as Sentinel could promote.
///
/// ## Changing N
/// Each call passes its object's `permits`, so N may change at run time by using another
/// value: holders above a lowered N keep their permits until they release them or their
/// leases end (nothing is revoked), and no new permit is handed out until fewer than the
/// new N are held. Objects that disagree on N each judge by their own.

#include <redcoord/core/deadline.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/core/holder_label.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/core/options.hpp>
#include <redcoord/core/pool.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

REDCOORD_API_BEGIN
namespace redcoord {

/// Options of a semaphore.
struct semaphore_options {
    /// N: how many permits may be held at once. Must be >= 1.
    std::uint64_t permits = 1;
    /// Lease length, drift allowance and waiting (core/options.hpp): `ttl` is each acquired
    /// permit's lease (a permit not released or extended within it comes back);
    /// `max_retry_interval` bounds a waiter's sleep when no lease end is known or the pub/sub
    /// link is down. `retry_jitter` adds up to that much to a sleep until a known
    /// lease end, so the waiters of one lease do not all ask at once; `wake_jitter` is not used
    /// (a release notice wakes the waiters at once).
    lock_timing timing;
    /// Opt-in watchdog: while a permit is held, the runtime's timer thread extends its lease
    /// to `ttl` every ttl/3; a permit whose extension finds it lost (its lease ended) or
    /// that reaches the end of its validity unextended reports lost(). Off: the holder
    /// extends (permit::extend()) or finishes within ttl.
    bool watchdog = false;
    /// FIFO order: permits go to waiters in the order they first waited (see "Order" above).
    /// Default off (no barging, but no order among waiters).
    bool fifo = false;
    /// Replicas that must acknowledge each acquisition and extension (Redis WAIT,
    /// core/options.hpp, and "Replicas" above); none by default. `replication.timeout` must be
    /// below `timing.ttl`.
    replication_options replication;
    /// Key prefix; keys are `<prefix>semaphore:{<name>}`, `...:fence`, `...:waiting` (the
    /// queued waiters), `...:queue` (their arrival order, with `fifo`), `...:permits` (the
    /// latest acquisition's N, for inspect), the channel `...:released`.
    std::string prefix{default_prefix};
    /// Holder label carried in each holding's token (core/holder_label.hpp), shown by
    /// `inspect`, the dashboard and the CLI: nullopt (the default) gives `<host>:<pid>`, an
    /// empty string none. At most max_holder_label bytes, no CR, LF or NUL (invalid_argument
    /// from the constructor). Informative only: ownership is the whole token.
    std::optional<std::string> label;
};

namespace detail {
struct permit_state;
struct semaphore_access;
}  // namespace detail

/// One acquisition of n permits, released when destroyed (RAII). Move-only; an empty
/// (moved-from or default) permit holds nothing.
///
/// The lease's validity is `sent_at + ttl - drift` on the runtime's clock (runtime_clock: the
/// steady clock unless a test advanced it; drift =
/// `ttl * drift_factor + 2 ms`, as for the locks: lock_timing), taken before the request was sent, so it ends before the
/// lease does in Redis.
///
/// @par Thread safety
/// One permit is used by one thread at a time (the watchdog's own access is synchronised);
/// distinct permits are independent.
class permit {
public:
    /// An empty permit.
    permit() noexcept;
    /// Releases the permits if still held: best effort, never throws (a release whose reply
    /// is lost leaves the lease to end by its TTL).
    ~permit();
    /// Moves the holding; `other` becomes empty.
    permit(permit&& other) noexcept;
    /// Releases what this permit held (as the destructor), then takes `other`'s holding.
    permit& operator=(permit&& other) noexcept;
    permit(const permit&) = delete;
    permit& operator=(const permit&) = delete;

    /// True while this object holds permits (until release(), even if lost()).
    [[nodiscard]] bool held() const noexcept;
    /// Same as held().
    explicit operator bool() const noexcept { return held(); }
    /// How many permits this acquisition holds (0 when empty).
    [[nodiscard]] std::uint64_t count() const noexcept;
    /// The fencing token of this acquisition: strictly larger than every earlier
    /// acquisition's on the same name (see the file comment). 0 when empty.
    [[nodiscard]] std::uint64_t fencing_token() const noexcept;
    /// The random token naming this acquisition's leases: 40 hex characters, then `/` and the
    /// holder label unless semaphore_options::label is empty (core/holder_label.hpp).
    [[nodiscard]] const std::string& token() const noexcept;
    /// Instant until which the permits may be trusted as held, on the runtime's clock.
    [[nodiscard]] std::chrono::steady_clock::time_point valid_until() const noexcept;
    /// True when the holding can no longer be trusted: an extension found a lease ended, or
    /// the validity passed without extension. False when empty.
    [[nodiscard]] bool lost() const noexcept;
    /// Extends every lease of this acquisition to `ttl` (milliseconds, > 0) from now.
    /// @return true when extended; false when empty or lost (a lease had ended: its other
    ///         permits are released and lost() becomes true), or, with
    ///         semaphore_options::replication, when fewer replicas acknowledged the extension
    ///         (the validity stays as it was; not lost).
    /// @throws outcome_unknown when the request was sent but its reply was lost;
    ///         connection_error / pool_exhausted when it could not be sent;
    ///         invalid_argument for a ttl <= 0.
    [[nodiscard]] bool extend(std::chrono::milliseconds ttl);
    /// Same, with the semaphore's ttl.
    [[nodiscard]] bool extend();
    /// Releases the permits and waits for the answer; the permit is empty afterwards
    /// whatever happens.
    /// @return true when all its leases were still held; false when empty or some had ended.
    /// @throws outcome_unknown when the request was sent but its reply was lost;
    ///         connection_error / pool_exhausted when it could not be sent.
    bool release();

private:
    friend class semaphore;
    friend struct detail::semaphore_access;
    explicit permit(std::shared_ptr<detail::permit_state> s) noexcept;
    std::shared_ptr<detail::permit_state> state_;
};

/// N expiring permits per name, shared by every client using the name (see the file comment).
///
/// @par Cost
/// An attempt is one EVALSHA round trip; a release one more, and a PUBLISH only while
/// someone waits.
///
/// @par Thread safety
/// All members may be called from any thread at once; each call is independent (an object
/// is not one holder, unlike distributed_lock: every acquisition returns its own permit).
///
/// @par Errors
/// The acquire functions throw invalid_argument for n = 0 or n > permits (nothing sent), and
/// connection_error, timeout_error, pool_exhausted or reply_error when Redis cannot answer.
class semaphore {
public:
    /// A semaphore on `name` over `pool` (which must outlive it and its permits). Nothing
    /// is sent here.
    /// @throws invalid_argument for a bad name (see validate_name; a `}` anywhere is refused
    ///         too) or bad options.
    semaphore(connection_pool& pool, std::string name, semaphore_options opts = {});
    /// Stops listening for releases. Permits taken from it stay valid.
    ~semaphore();
    semaphore(const semaphore&) = delete;
    semaphore& operator=(const semaphore&) = delete;

    /// One attempt at `n` permits (all or none), no waiting.
    /// @return the permit, or nullopt when fewer than n are free.
    [[nodiscard]] std::optional<permit> try_acquire(std::uint64_t n = 1);
    /// Waits up to `d` for `n` permits, woken by releases (no polling).
    template <class Rep, class Period>
    [[nodiscard]] std::optional<permit> try_acquire_for(
        std::uint64_t n, const std::chrono::duration<Rep, Period>& d) {
        return acquire_until(n, deadline_after(d));
    }
    /// Waits until `tp` (any clock; converted to steady time once) for `n` permits.
    template <class Clock, class Duration>
    [[nodiscard]] std::optional<permit> try_acquire_until(
        std::uint64_t n, const std::chrono::time_point<Clock, Duration>& tp) {
        return acquire_until(n, deadline_after(tp - Clock::now()));
    }
    /// Blocks until `n` permits are acquired.
    [[nodiscard]] permit acquire(std::uint64_t n = 1);

    /// The name given at construction.
    [[nodiscard]] const std::string& name() const noexcept;
    /// The options given at construction.
    [[nodiscard]] const semaphore_options& options() const noexcept;

private:
    std::optional<permit> acquire_until(std::uint64_t n,
                                        std::chrono::steady_clock::time_point deadline);
    friend struct detail::semaphore_access;
    struct impl;
    std::shared_ptr<impl> impl_;
};

}  // namespace redcoord

REDCOORD_API_END
