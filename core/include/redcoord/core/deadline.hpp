#pragma once
/// @file
/// Saturating deadline arithmetic on `std::chrono::steady_clock`, shared by every part.
///
/// `steady_clock::now() + milliseconds::max()` overflows the clock's int64 nanoseconds (undefined
/// behaviour; in practice it wraps to the past), so a caller asking to wait "as long as possible"
/// would time out at once. Every public entry point that takes a wait turns it into a deadline
/// through these helpers instead.

#include <redcoord/core/export.hpp>

#include <chrono>

REDCOORD_API_BEGIN
namespace redcoord {

/// A steady-clock time point that stands for "no deadline": ten years from the process's first
/// call, far enough to mean forever, near enough that adding a few hours still cannot overflow.
/// Thread-safe.
inline std::chrono::steady_clock::time_point forever() noexcept {
    // One fixed instant, so every "no deadline" compares equal and a deadline computed from
    // forever() stays there (a sliding now()+10y would move past it).
    static const auto far = std::chrono::steady_clock::now() + std::chrono::hours(24 * 365 * 10);
    return far;
}

/// `from + wait`, saturated: a negative wait gives `from`, and any wait that would reach past
/// forever() (for example `milliseconds::max()` or `hours::max()`) gives forever(). Works for
/// any duration type; thread-safe.
template <class Rep, class Period>
std::chrono::steady_clock::time_point deadline_after(
    std::chrono::duration<Rep, Period> wait, std::chrono::steady_clock::time_point from) noexcept {
    using std::chrono::duration_cast;
    using ns = std::chrono::nanoseconds;
    if (wait <= std::chrono::duration<Rep, Period>::zero()) return from;
    const auto far = forever();
    if (from >= far) return from;
    // Compare in the caller's unit, so the wait is never converted to something that overflows.
    const auto room = far - from;
    if (wait >= duration_cast<std::chrono::duration<Rep, Period>>(room)) return far;
    return from + duration_cast<ns>(wait);
}

/// `deadline_after(wait, steady_clock::now())`.
template <class Rep, class Period>
std::chrono::steady_clock::time_point deadline_after(
    std::chrono::duration<Rep, Period> wait) noexcept {
    return deadline_after(wait, std::chrono::steady_clock::now());
}

/// Time left until `deadline`, never negative, in the requested unit (rounded down).
template <class Duration = std::chrono::milliseconds>
Duration time_left(std::chrono::steady_clock::time_point deadline) noexcept {
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) return Duration::zero();
    return std::chrono::duration_cast<Duration>(left);
}

}  // namespace redcoord

REDCOORD_API_END
