#pragma once
/// @file
/// The answer of a limiter (rate_limiter, sliding_window_limiter) to one request.

#include <redcoord/core/export.hpp>

#include <chrono>
#include <cstdint>

REDCOORD_API_BEGIN
namespace redcoord {

/// What a limiter answered to one request of a given cost. Times are measured on the Redis
/// server's clock (TIME inside the script), so clients whose clocks disagree get the same
/// answers.
struct limit_result {
    /// True when the request was admitted (and counted against the limit).
    bool allowed = false;
    /// How many more cost-1 requests would be admitted right after this answer, were they
    /// sent at once (after counting this request when it was admitted).
    std::uint64_t remaining = 0;
    /// When refused: how long, in microseconds, until a request of the same cost would be
    /// admitted if nobody else asked meanwhile. Zero when allowed.
    std::chrono::microseconds retry_after{0};
    /// How long, in microseconds, until the limiter is back to idle (full burst, empty window)
    /// if nobody asks meanwhile; its keys expire then.
    std::chrono::microseconds reset_after{0};
};

}  // namespace redcoord

REDCOORD_API_END
