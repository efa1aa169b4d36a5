#pragma once
/// @file
/// A one-shot count-down latch in a Redis key; pub/sub only wakes the waiters (docs/signaling.md;
/// compare Java's CountDownLatch and Redisson's RCountDownLatch).

#include <redcoord/core/export.hpp>
#include <redcoord/signaling/signal_hub.hpp>

#include <chrono>
#include <cstdint>
#include <string>

REDCOORD_API_BEGIN
namespace redcoord {

namespace detail {
struct latch_access;
}

/// Options of a latch.
struct latch_options {
    /// A waiter re-reads the count at least this often (milliseconds), so a wake signal lost
    /// while every link was down delays it by at most this much. Must be > 0.
    std::chrono::milliseconds recheck_interval{1000};
    /// The latch key expires this long (milliseconds) after the latch was created, last
    /// counted down or reset, open or not, so latches with per-job names do not grow the
    /// keyspace forever. An expired latch no longer exists: count() reads 0, count_down()
    /// throws, wait() waits (until a latch object re-creates it). Must be > 0 and <= 366 days.
    std::chrono::milliseconds ttl{std::chrono::hours(24)};
};

/// The largest count a latch holds exactly (2^53: Redis scripts compute in doubles).
inline constexpr std::uint64_t latch_max_count = std::uint64_t{1} << 53;

/// A count-down latch shared by processes: wait() returns once count_down() has been called
/// `count` times in total; it then stays open (until reset()).
///
/// State: the integer key `<prefix>latch:{name}` on the master, expiring latch_options::ttl
/// after its last write. count_down() is one Lua script (decrement, and PUBLISH on channel
/// `<prefix>latch:{name}` when it reaches zero);
/// wait() subscribes FIRST, then reads the key, then waits, re-reading on every wake and
/// every recheck_interval, so it never misses the opening.
///
/// @par Thread safety
/// All functions may be called from any thread. The hub must outlive the latch.
///
/// @par Errors
/// The constructor throws invalid_argument for a bad name or a count above latch_max_count;
/// count_down() throws invalid_argument for a bad n, error when the key was deleted or expired,
/// and outcome_unknown when its script was sent but the reply was lost (the count may or may not
/// have gone down: do not simply count down again); count() throws protocol_error when the key
/// holds anything but a count; every call throws the hub's and pool's connection_error,
/// timeout_error or pool_exhausted (from count_down() only when nothing was sent) and
/// reply_error; a wait that times out returns false.
///
/// @par Cost
/// count_down(): one EVALSHA round trip (with a PUBLISH inside when the count reaches zero);
/// count(): one GET; wait(): a subscription on the shared links, one GET, then one more per wake
/// and per recheck_interval.
class latch {
public:
    /// Creates the latch key with `count` when it does not exist yet (SET NX); an existing
    /// latch keeps its current count.
    /// @throws invalid_argument for a bad name or options, or a count above latch_max_count
    ///         (before anything is sent); errors of the master pool.
    latch(signal_hub& hub, std::string name, std::uint64_t count, latch_options opts = {});

    /// Decrements the count by `n` (not below zero); opens the latch when it reaches zero.
    /// @return the count left.
    /// @throws invalid_argument when n is 0 or above latch_max_count; error when the key was
    ///         deleted or expired;
    /// @throws outcome_unknown when the script was sent and its reply was lost (the command
    ///         timeout passed, or the link broke mid-command; also for a connection whose server
    ///         had just died, which the client cannot tell from one that ran it): the count may
    ///         or may not have been decremented, and counting down again could count this
    ///         party twice and open the latch early;
    /// @throws connection_error, timeout_error, pool_exhausted when nothing was sent (no
    ///         connection could be borrowed or opened), and reply_error when the server refused
    ///         the script: the count is unchanged then.
    std::uint64_t count_down(std::uint64_t n = 1);
    /// Waits up to `timeout` (milliseconds; milliseconds::max() waits without a deadline)
    /// for the latch to open.
    /// @return true when open, false on timeout. @throws hub and pool errors.
    [[nodiscard]] bool wait(std::chrono::milliseconds timeout);
    /// The current count (0 when open or when the key is missing).
    /// @throws protocol_error when the key holds anything but a count (for example "-5");
    ///         pool errors.
    [[nodiscard]] std::uint64_t count();
    /// Sets the count again (only when nobody relies on the old round) and renews the TTL.
    /// @throws invalid_argument for a count above latch_max_count; pool errors.
    void reset(std::uint64_t count);

    /// The latch's name, as given.
    [[nodiscard]] const std::string& name() const noexcept { return name_; }

private:
    friend struct detail::latch_access;  // async_wait (async.hpp)
    signal_hub& hub_;
    std::string name_;
    latch_options opts_;
    std::string key_;
};

}  // namespace redcoord

REDCOORD_API_END
