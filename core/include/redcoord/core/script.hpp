#pragma once
/// @file
/// A Lua script run by SHA1 with EVALSHA, loading it on NOSCRIPT (redis.io: EVALSHA).

#include <redcoord/core/connection.hpp>
#include <redcoord/core/pool.hpp>

#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace redcoord {

/// A Lua script: its source and SHA1, computed once at construction.
///
/// run() sends `EVALSHA sha numkeys keys... args...`; on a NOSCRIPT error reply (script
/// cache flushed, failover, restart) it sends `SCRIPT LOAD` and retries once. Keys and
/// values always travel as KEYS/ARGV, never spliced into the source.
///
/// Thread-safety: immutable after construction; share freely.
class script {
public:
    /// @throws invalid_argument when `source` is empty.
    explicit script(std::string source);

    [[nodiscard]] const std::string& source() const noexcept { return source_; }
    /// Lower-case hex SHA1 of the source, as Redis computes it.
    [[nodiscard]] const std::string& sha1() const noexcept { return sha1_; }

    /// Runs the script on `c`. Same errors as connection::command (a Lua error surfaces as
    /// reply_error with the server's text).
    reply run(connection& c, std::span<const std::string_view> keys,
              std::span<const std::string_view> args) const;
    /// Same, with literal lists: `s.run(c, {key}, {token, ttl})`.
    reply run(connection& c, std::initializer_list<std::string_view> keys,
              std::initializer_list<std::string_view> args) const;
    /// Borrows from `pool`, runs, returns the connection.
    reply run(connection_pool& pool, std::initializer_list<std::string_view> keys,
              std::initializer_list<std::string_view> args) const;

    /// The argument vector of `EVALSHA sha numkeys keys... args...` (for fan-out).
    [[nodiscard]] std::vector<std::string> evalsha_argv(std::span<const std::string_view> keys,
                                                        std::span<const std::string_view> args) const;
    /// The argument vector of `EVAL source numkeys keys... args...` (NOSCRIPT fallback).
    [[nodiscard]] std::vector<std::string> eval_argv(std::span<const std::string_view> keys,
                                                     std::span<const std::string_view> args) const;

private:
    std::string source_;
    std::string sha1_;
};

/// True when `e` is Redis's NOSCRIPT error (the script is not in the server's cache).
[[nodiscard]] bool is_noscript(const reply& e) noexcept;

}  // namespace redcoord
