#pragma once
/// @file
/// How long a failed job waits before its next attempt: fixed, or exponential with jitter
/// (Marc Brooker, "Exponential Backoff And Jitter", AWS Architecture Blog, 2015).

#include <redcoord/core/export.hpp>

#include <chrono>

REDCOORD_API_BEGIN
namespace redcoord {

/// A retry delay policy.
///
/// The delay after the n-th failure (n >= 1) is `base` for kind::fixed, and
/// `min(base * 2^(n-1), max)` for kind::exponential. With `jitter` j > 0 the delay is drawn
/// uniformly from `[d * (1 - j), d]`: j = 1 is "full jitter", which spreads the retries of many
/// jobs that failed together (a dead dependency) so they do not return in one burst.
///
/// @par Thread safety
/// A plain value; delay() is const and pure.
struct backoff_policy {
    /// The shape of the delays.
    enum class kind {
        fixed,        ///< Every delay is `base`.
        exponential,  ///< `base`, 2 * `base`, 4 * `base`, ... up to `max`.
    };
    kind shape = kind::exponential;  ///< Fixed or exponential.
    /// The first delay (exponential) or every delay (fixed), in milliseconds; >= 0.
    std::chrono::milliseconds base{1000};
    /// The longest delay, in milliseconds (exponential; >= base). Default one hour.
    std::chrono::milliseconds max{3'600'000};
    /// The fraction of each delay that is random, in [0, 1]; 0: none.
    double jitter = 0.0;

    /// A fixed delay of `d`.
    [[nodiscard]] static backoff_policy fixed(std::chrono::milliseconds d) {
        return {kind::fixed, d, d, 0.0};
    }
    /// Exponential from `base` up to `max`, with `jitter`.
    [[nodiscard]] static backoff_policy exponential(std::chrono::milliseconds base,
                                                    std::chrono::milliseconds max,
                                                    double jitter = 0.0) {
        return {kind::exponential, base, max, jitter};
    }

    /// The delay after failure number `failures` (1 for the first; 0 is treated as 1), with
    /// `unit_random` in [0, 1) choosing the jittered point (0 gives the longest delay).
    /// Never overflows: exponential growth stops at `max`.
    [[nodiscard]] std::chrono::milliseconds delay(unsigned failures, double unit_random) const;

    /// @throws invalid_argument for a negative base, a max below base (exponential), or a
    /// jitter outside [0, 1] (or NaN).
    void validate() const;
};

}  // namespace redcoord

REDCOORD_API_END
