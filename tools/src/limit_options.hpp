#pragma once
/// @file
/// The rate limiter's options as `redcoord limit` and `redcoord inspect limit` take them.

#include "context.hpp"

#include <redcoord/limit/rate_limiter.hpp>

#include <cstdint>
#include <string>

namespace redcoord::cli {

/// `--rate` (parse_rate()), `--burst` and the global `--prefix` as rate_limiter_options.
/// @throws invalid_argument for a bad rate.
[[nodiscard]] rate_limiter_options limit_options(const context& ctx, const std::string& rate,
                                                 std::uint64_t burst);

}  // namespace redcoord::cli
