#pragma once
/// @file
/// `redcoord inspect semaphore|rwlock|limit NAME`: the limiters' views (redcoord/limit/
/// inspect.hpp) as text or JSON, plugged into inspect_command.cpp's snapshot and --watch loop.

#include "context.hpp"

#include <redcoord/core/pool.hpp>

#include <cstdint>
#include <functional>
#include <string>

namespace redcoord::cli {

/// The options only the limiters' inspect subcommands have.
struct limit_inspect_args {
    std::uint64_t permits = 0;  ///< semaphore: its N, to show permits left (0: as stored)
    std::string rate;           ///< limit: --rate, as `redcoord limit` takes it (empty: as stored)
    std::uint64_t burst = 1;    ///< limit: --burst
    bool window = false;        ///< limit: --window, a sliding_window_limiter of that name
};

/// True for the kinds this file handles: semaphore, rwlock, limit.
[[nodiscard]] bool is_limit_kind(const std::string& kind);

/// Adds `kind`'s own options (semaphore: --permits; limit: --rate, --burst, --window) to `sub`.
void add_limit_inspect_options(CLI::App& sub, const std::string& kind, limit_inspect_args& a);

/// A printer of one snapshot of `kind` NAME over `pool`.
/// @throws invalid_argument for a bad --rate or --burst (limit).
[[nodiscard]] std::function<void()> make_limit_printer(const context& ctx, const std::string& kind,
                                                       const std::string& name,
                                                       const limit_inspect_args& a,
                                                       connection_pool& pool);

}  // namespace redcoord::cli
