#pragma once
/// @file
/// A rate limiter on Redis: the generic cell rate algorithm (GCRA), as the ATM Forum's
/// traffic management specification defines it and as redis-cell
/// (https://github.com/brandur/redis-cell) and Stripe ("Scaling your API with rate limiters",
/// https://stripe.com/blog/rate-limiters) use it for API limits.
///
/// ## The algorithm
/// A limiter of `rate` requests per `period` and a `burst` keeps one number per name: the
/// theoretical arrival time (TAT) of the next request, in the server's microseconds. Each
/// request of cost c moves it to `max(TAT, now) + c * interval` (interval = period / rate),
/// and is admitted iff that lands no later than `now + burst * interval`. So an idle limiter
/// admits `burst` unit requests at once, then one per interval: in any span of time t, never
/// more than `burst + rate * t / period` units pass (tests/unit/limit checks this over seeded
/// schedules). A refused request changes nothing and learns exactly when it would pass.
///
/// ## Time
/// "now" is Redis's TIME, read inside the script, so every client sees one clock and skewed
/// client clocks change nothing. The key expires when the limiter is back to full, so idle
/// names leave no keys. The key is `<prefix>rate:{<name>}` (one Cluster slot per name).

#include <redcoord/core/export.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/limit/limit_result.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

REDCOORD_API_BEGIN
namespace redcoord {

/// Options of a rate_limiter: `rate` requests per `period`, up to `burst` at once.
struct rate_limiter_options {
    /// Requests admitted per `period` in the long run (may be fractional: 0.5 per second is
    /// one every two seconds). Must be > 0 and finite; period / rate must be at least one
    /// nanosecond.
    double rate = 0;
    /// The period `rate` is counted over. Must be > 0. Default one second.
    std::chrono::microseconds period{std::chrono::seconds(1)};
    /// How many cost-1 requests an idle limiter admits at once; also the largest cost one
    /// request may have. Must be >= 1, and burst * period / rate at most 10^14 us (about
    /// three years). Default 1: no bursts, evenly spaced requests.
    std::uint64_t burst = 1;
    /// Key prefix; the key is `<prefix>rate:{<name>}`.
    std::string prefix{default_prefix};
};

/// A rate read from text by parse_rate(): `rate` requests per `period`.
struct rate_spec {
    /// Requests per period (> 0).
    double rate = 0;
    /// The period (> 0).
    std::chrono::microseconds period{std::chrono::seconds(1)};
};

/// Reads a rate as a person types it: `<count>/<period>`, the count a decimal number (a
/// fraction is allowed) and the period a duration as parse_duration() reads it, whose leading
/// `1` may be left out: `100/s`, `5/m`, `0.5/s`, `3/1h`, `1000/1m30s`, `20/500ms`.
/// @throws invalid_argument for anything else, a count <= 0 or a zero period.
[[nodiscard]] rate_spec parse_rate(std::string_view text);

/// A GCRA rate limiter shared by every client that uses the same name and options.
///
/// Clients using one name must use the same rate and burst: each request is judged with the
/// options of the client that sends it.
///
/// @par Cost
/// try_acquire() is one EVALSHA round trip; a refused request writes nothing.
///
/// @par Thread safety
/// All members may be called from any thread at once.
///
/// @par Errors
/// try_acquire() and acquire() throw invalid_argument for a cost of 0 or above the burst
/// (before anything is sent), and connection_error, timeout_error, pool_exhausted or
/// reply_error (permission_error for a missing ACL right) when Redis cannot answer.
class rate_limiter {
public:
    /// A limiter for `name` over `pool` (which must outlive it). Nothing is sent here.
    /// @throws invalid_argument for a bad name (see validate_name; a `}` anywhere is refused
    ///         too) or bad options.
    rate_limiter(connection_pool& pool, std::string name, rate_limiter_options opts);
    ~rate_limiter();
    rate_limiter(const rate_limiter&) = delete;
    rate_limiter& operator=(const rate_limiter&) = delete;

    /// Asks once for `cost` units, without waiting.
    /// @return allowed, remaining, retry_after (when refused) and reset_after.
    [[nodiscard]] limit_result try_acquire(std::uint64_t cost = 1);

    /// Asks for `cost` units, waiting up to `wait` (microseconds or coarser; zero: one
    /// attempt). A refused attempt sleeps exactly its retry_after on the calling thread and
    /// asks again (no polling); when retry_after exceeds the wait left it returns the refusal
    /// at once instead of sleeping in vain.
    /// @return the last answer: allowed, or refused once the wait cannot cover retry_after.
    [[nodiscard]] limit_result acquire(std::uint64_t cost, std::chrono::microseconds wait);

    /// The name given at construction.
    [[nodiscard]] const std::string& name() const noexcept;

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

}  // namespace redcoord

REDCOORD_API_END
