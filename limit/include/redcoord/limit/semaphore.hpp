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
/// ## Changing N
/// Each call passes its object's `permits`, so N may change at run time by using another
/// value: holders above a lowered N keep their permits until they release them or their
/// leases end (nothing is revoked), and no new permit is handed out until fewer than the
/// new N are held. Objects that disagree on N each judge by their own.

#include <redcoord/core/deadline.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/core/holder_label.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/core/pool.hpp>

#include <chrono>
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
    /// Lease of each acquired permit, in milliseconds: a permit not released or extended
    /// within it comes back. Must be > 0. Default 30 s.
    std::chrono::milliseconds ttl{30000};
    /// Opt-in watchdog: while a permit is held, the runtime's timer thread extends its lease
    /// to `ttl` every ttl/3; a permit whose extension finds it lost (its lease ended) or
    /// that reaches the end of its validity unextended reports lost(). Off: the holder
    /// extends (permit::extend()) or finishes within ttl.
    bool watchdog = false;
    /// Longest single sleep of a waiter, in milliseconds, when no lease end is known or the
    /// pub/sub link is down. Must be > 0. Default 500 ms.
    std::chrono::milliseconds max_retry_interval{500};
    /// Key prefix; keys are `<prefix>semaphore:{<name>}`, `...:fence`, `...:waiting` (the
    /// queued waiters), the channel `...:released`.
    std::string prefix{default_prefix};
    /// Holder label carried in each holding's token (core/holder_label.hpp), shown by
    /// `inspect`, the dashboard and the CLI: nullopt (the default) gives `<host>:<pid>`, an
    /// empty string none. At most max_holder_label bytes, no CR, LF or NUL (invalid_argument
    /// from the constructor). Informative only: ownership is the whole token.
    std::optional<std::string> label;
};

namespace detail {
/// Checks `o`. @throws invalid_argument naming the offending field.
void validate(const semaphore_options& o);
struct permit_state;
}  // namespace detail

/// One acquisition of n permits, released when destroyed (RAII). Move-only; an empty
/// (moved-from or default) permit holds nothing.
///
/// The lease's validity is `sent_at + ttl - drift` on the local steady clock (drift = 1 %
/// of ttl + 2 ms, as for the locks), taken before the request was sent, so it ends before the
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
    /// Steady-clock instant until which the permits may be trusted as held.
    [[nodiscard]] std::chrono::steady_clock::time_point valid_until() const noexcept;
    /// True when the holding can no longer be trusted: an extension found a lease ended, or
    /// the validity passed without extension. False when empty.
    [[nodiscard]] bool lost() const noexcept;
    /// Extends every lease of this acquisition to `ttl` (milliseconds, > 0) from now.
    /// @return true when extended; false when empty or lost (a lease had ended: its other
    ///         permits are released and lost() becomes true).
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
    struct impl;
    std::shared_ptr<impl> impl_;
};

}  // namespace redcoord

REDCOORD_API_END
