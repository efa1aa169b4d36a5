#pragma once
/// @file
/// The CLI's durations: the library's parser (redcoord/core/duration.hpp) and "no timeout".

#include <redcoord/core/duration.hpp>

#include <chrono>

namespace redcoord::cli {

using redcoord::format_duration;
using redcoord::parse_duration;

/// A timeout long enough to mean "no timeout" (one year) yet safe to add to a steady_clock
/// time point.
inline constexpr std::chrono::milliseconds forever{std::chrono::hours(24 * 365)};

}  // namespace redcoord::cli
