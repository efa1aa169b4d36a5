#pragma once
/// @file
/// Read-only snapshots for the parts' inspect functions: several reads in one MULTI/EXEC, so
/// what an operator sees (a holder and its TTL, a queue's lists) is one instant's state.

#include <redcoord/core/export.hpp>
#include <redcoord/core/reply.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord {
class connection_pool;
namespace detail {

/// Runs `reads` inside MULTI/EXEC on one pooled connection and returns their replies in order.
/// An error reply of one read stays a value (reply::is_error()).
/// @throws reply_error when MULTI or EXEC is refused (e.g. an ACL user without +multi);
/// @throws invalid_argument when `reads` is empty or holds an empty command;
/// @throws connection_error, timeout_error, protocol_error, pool_exhausted as
///         connection_pool::borrow() and connection::pipeline().
[[nodiscard]] std::vector<reply> read_snapshot(connection_pool& pool,
                                               std::vector<std::vector<std::string>> reads);

/// A `TIME` reply as a duration since the server's epoch (microsecond resolution).
/// @throws protocol_error when the reply is not TIME's two integers.
[[nodiscard]] std::chrono::microseconds server_time(const reply& time_reply);

/// A PTTL reply as a duration; nullopt when the key is missing (-2) or has no TTL (-1).
/// @throws protocol_error when the reply is not an integer.
[[nodiscard]] std::optional<std::chrono::milliseconds> ttl_of(const reply& pttl_reply);

/// A stored unsigned counter (a GET or HGET reply); nullopt when the key or field is missing.
/// @param what names the value for the error message.
/// @throws protocol_error when the value is not a decimal unsigned integer.
[[nodiscard]] std::optional<std::uint64_t> counter_of(const reply& r, std::string_view what);

}  // namespace detail
}  // namespace redcoord
REDCOORD_API_END
