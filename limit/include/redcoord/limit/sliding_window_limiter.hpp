#pragma once
/// @file
/// A sliding-window-log limiter on Redis: at most `limit` requests in any window of length
/// `window`, exactly (the "sliding log" of Figma's "An alternative approach to rate limiting",
/// https://www.figma.com/blog/an-alternative-approach-to-rate-limiting/, and of
/// rate-limiter-flexible's RateLimiterRedis with `execEvenly` off).
///
/// ## Which limiter
/// rate_limiter (GCRA) keeps one number per name and smooths requests to a rate with a burst
/// allowance. This one keeps one sorted-set member per admitted unit (memory O(limit) per
/// name) and in exchange enforces "never more than N in any window W" exactly, which a
/// contract or an upstream quota may state ("100 calls per rolling minute").
///
/// ## Time
/// Admission times are Redis's TIME, read inside the script (client clocks never matter). A
/// unit admitted at s counts while now < s + window. Keys: `<prefix>window:{<name>}` (the log)
/// and `...:seq`; both expire a window after the last admission.

#include <redcoord/core/export.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/limit/limit_result.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

REDCOORD_API_BEGIN
namespace redcoord {

/// Options of a sliding_window_limiter: at most `limit` units in any `window`.
struct sliding_window_options {
    /// Most units admitted in any window; also the largest cost of one request. Must be in
    /// [1, 1000000] (the log holds one member per unit).
    std::uint64_t limit = 0;
    /// The window's length. Must be > 0 and at most 2^40 us (about 12.7 days).
    std::chrono::microseconds window{std::chrono::seconds(1)};
    /// Key prefix; the keys are `<prefix>window:{<name>}` and `...:seq`.
    std::string prefix{default_prefix};
};

/// An exact "at most N in any window" limiter shared by every client using the same name and
/// options.
///
/// @par Cost
/// try_acquire() is one EVALSHA round trip, which also drops the units that left the window;
/// an admitted request of cost c adds c members.
///
/// @par Thread safety
/// All members may be called from any thread at once.
///
/// @par Errors
/// As rate_limiter: invalid_argument for a cost of 0 or above the limit (nothing sent),
/// connection_error, timeout_error, pool_exhausted or reply_error when Redis cannot answer.
class sliding_window_limiter {
public:
    /// A limiter for `name` over `pool` (which must outlive it). Nothing is sent here.
    /// @throws invalid_argument for a bad name (see validate_name; a `}` anywhere is refused
    ///         too) or bad options.
    sliding_window_limiter(connection_pool& pool, std::string name, sliding_window_options opts);
    ~sliding_window_limiter();
    sliding_window_limiter(const sliding_window_limiter&) = delete;
    sliding_window_limiter& operator=(const sliding_window_limiter&) = delete;

    /// Asks once for `cost` units, without waiting.
    [[nodiscard]] limit_result try_acquire(std::uint64_t cost = 1);

    /// Asks for `cost` units, waiting up to `wait`, as rate_limiter::acquire(): sleeps exactly
    /// retry_after between attempts, and gives up at once when retry_after exceeds the wait left.
    [[nodiscard]] limit_result acquire(std::uint64_t cost, std::chrono::microseconds wait);

    /// The name given at construction.
    [[nodiscard]] const std::string& name() const noexcept;

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

}  // namespace redcoord

REDCOORD_API_END
