#pragma once
/// @file
/// The compact binary envelope a reliable_queue wraps around every message, so equal payloads
/// are never confused and a message carries its retry count (DESIGN.md §Queue).

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace redcoord {

/// A message's identity: 16 bytes (8 random bytes per producer + an 8-byte counter).
using message_id = std::array<std::uint8_t, 16>;

/// The decoded fields of one envelope.
///
/// Wire layout (all integers big-endian), 32 header bytes then the payload verbatim:
/// `"\0RQ\1"` (4-byte magic and version) | id (16) | attempts (u32) | enqueued at (u64,
/// milliseconds since the Unix epoch) | payload (any bytes, NUL/CR/LF included).
/// The recovery and nack Lua scripts rewrite the attempts field in place at this offset.
///
/// Thread-safety: a plain value type.
struct envelope {
    message_id id{};                 ///< Unique per pushed message.
    std::uint32_t attempts = 0;      ///< Deliveries that ended without an ack so far.
    /// Wall-clock time of the push (system_clock; a timestamp, never used for lease math).
    std::chrono::system_clock::time_point enqueued_at{};
    std::string payload;             ///< The user's bytes.
};

/// Bytes before the payload in an encoded envelope.
inline constexpr std::size_t envelope_header_size = 32;
/// The first four bytes of every envelope (NUL, 'R', 'Q', version 1).
inline constexpr std::string_view envelope_magic{"\0RQ\1", 4};

/// Encodes `e` into its wire form (envelope_header_size + payload bytes).
/// Time before the epoch or past 2^64 ms is clamped. Never throws except std::bad_alloc.
[[nodiscard]] std::string encode_envelope(const envelope& e);

/// Decodes a wire string. Returns nullopt when `wire` is not an envelope (too short, or not
/// starting with envelope_magic): such an element is a raw payload pushed by another client
/// (e.g. `redis-cli LPUSH`), which reliable_queue delivers as-is with attempts 0. Never throws
/// except std::bad_alloc.
[[nodiscard]] std::optional<envelope> decode_envelope(std::string_view wire);

/// Lower-case hex of an id (32 characters).
[[nodiscard]] std::string to_hex(const message_id& id);

}  // namespace redcoord
