#pragma once
/// @file
/// The argument vector of a script's EVALSHA or EVAL, for redcoord's own senders (fan-out,
/// replication, script::run) and tests. Internal to redcoord; not a stable API.

#include <redcoord/core/export.hpp>
#include <redcoord/core/script.hpp>

#include <span>
#include <string>
#include <string_view>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord::detail {

/// `EVALSHA sha numkeys keys... args...` (`by_sha`) or `EVAL source numkeys keys... args...`,
/// as views into `s`, `keys`, `args` and `nkeys` (which receives the key count's text and
/// must outlive the result).
[[nodiscard]] std::vector<std::string_view> script_argv(const script& s, bool by_sha,
                                                        std::span<const std::string_view> keys,
                                                        std::span<const std::string_view> args,
                                                        std::string& nkeys);

/// The same command, owned.
[[nodiscard]] std::vector<std::string> script_command(const script& s, bool by_sha,
                                                      std::span<const std::string_view> keys,
                                                      std::span<const std::string_view> args);

}  // namespace redcoord::detail

REDCOORD_API_END
