#pragma once
/// @file
/// Durations as a person types them on a command line: `500ms`, `20s`, `2m`, `1h`, `1m30s`,
/// `1.5s`. Used by every `--ttl`, `--wait`, `--term`, `--timeout` and `--grace` option.

#include <chrono>
#include <string>
#include <string_view>

namespace redcoord::cli {

/// Parses one duration: one or more `<number><unit>` pairs, number decimal (a fraction is
/// allowed: `1.5s`), unit one of `ms`, `s`, `m`, `h`. A bare `0` means zero. Rounded down to
/// whole milliseconds.
/// @throws redcoord::invalid_argument for an empty string, a missing or unknown unit, a
///         negative value or one over about 290 years.
[[nodiscard]] std::chrono::milliseconds parse_duration(std::string_view text);

/// The shortest exact spelling of `d` in the units above (e.g. `1m30s`, `500ms`, `0s`).
[[nodiscard]] std::string format_duration(std::chrono::milliseconds d);

/// A timeout long enough to mean "no timeout" (one year) yet safe to add to a steady_clock
/// time point.
inline constexpr std::chrono::milliseconds forever{std::chrono::hours(24 * 365)};

}  // namespace redcoord::cli
