#pragma once
/// @file
/// Durations as a person types them on a command line: `500ms`, `20s`, `2m`, `1h`, `1m30s`,
/// `1.5s`. Used by the CLI's `--ttl`, `--wait`, `--term`, `--timeout` and `--grace` options
/// and by the timeouts of endpoint URIs (`?connect_timeout=500ms`).
///
/// Thread-safety: pure functions.

#include <redcoord/core/export.hpp>

#include <chrono>
#include <string>
#include <string_view>

REDCOORD_API_BEGIN
namespace redcoord {

/// Parses one duration: one or more `<number><unit>` pairs, number decimal (a fraction is
/// allowed: `1.5s`), unit one of `ms`, `s`, `m`, `h`. A bare `0` means zero. Rounded down to
/// whole milliseconds.
/// @throws redcoord::invalid_argument for an empty string, a missing or unknown unit, a
///         negative value or one over about 290 years.
[[nodiscard]] std::chrono::milliseconds parse_duration(std::string_view text);

/// The shortest exact spelling of `d` in the units above (for example `1m30s`, `500ms`, `0s`).
[[nodiscard]] std::string format_duration(std::chrono::milliseconds d);

}  // namespace redcoord

REDCOORD_API_END
