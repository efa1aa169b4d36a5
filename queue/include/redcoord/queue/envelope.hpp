#pragma once
/// @file
/// The compact binary envelope a reliable_queue wraps around every message, so equal payloads
/// are never confused and a message carries its retry count (docs/queue.md).

#include <redcoord/core/export.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

REDCOORD_API_BEGIN
namespace redcoord {

/// A message's identity: 16 bytes, 128 random bits per producer (8 random bytes fixed per
/// queue object, then a counter that starts at a random 64-bit value), so ids from short-lived
/// producers do not collide either.
using message_id = std::array<std::uint8_t, 16>;

/// The decoded fields of one envelope.
///
/// Wire layout (all integers big-endian), 40 header bytes then the payload verbatim:
/// `"\0RQ\1"` (4-byte magic and version) | id (16) | attempts (u32) | enqueued at (u64,
/// milliseconds since the Unix epoch) | payload length (u32, bytes) | check (u32: the first
/// four bytes of SHA-1 over magic, id and payload length) | payload (any bytes, NUL/CR/LF
/// included). The recovery and nack Lua scripts rewrite the attempts field in place at this
/// offset (which is why the check leaves it out) and verify length and check with
/// redis.sha1hex, so both sides recognise an envelope by the same rule.
///
/// Why the length and check: another client may push a raw payload that happens to start
/// with the magic. It is taken for an envelope only if its bytes 32..35 equal its
/// own length minus 40 and bytes 36..39 match the check (about one in 2^32 of such payloads
/// even when the length matches); otherwise it is delivered, nacked and recovered byte-exact
/// as a raw payload. A deliberately forged header is accepted, which gives nothing a client
/// able to LPUSH to the queue could not do anyway.
///
/// Envelopes written by earlier versions (32-byte header, no length or check) are read as raw
/// payloads: drain a queue before upgrading its consumers.
///
/// Thread-safety: a plain value type.
struct envelope {
    message_id id{};             ///< Unique per pushed message.
    std::uint32_t attempts = 0;  ///< Deliveries that ended without an ack so far.
    /// Wall-clock time of the push (system_clock; a timestamp, never used for lease math).
    std::chrono::system_clock::time_point enqueued_at{};
    std::string payload;  ///< The user's bytes.
};

/// Bytes before the payload in an encoded envelope.
inline constexpr std::size_t envelope_header_size = 40;
/// The first four bytes of every envelope (NUL, 'R', 'Q', version 1).
inline constexpr std::string_view envelope_magic{"\0RQ\1", 4};

/// Encodes `e` into its wire form (envelope_header_size + payload bytes).
/// Time before the epoch or past 2^64 ms is clamped.
/// @throws payload_too_large (limits.hpp) for a payload of 4 GiB or more (the length field is
///         32 bits); otherwise only std::bad_alloc.
[[nodiscard]] std::string encode_envelope(const envelope& e);

/// Decodes a wire string. Returns nullopt when `wire` is not an envelope (too short, not
/// starting with envelope_magic, a length field that is not the payload's length, or a check
/// that does not match): such an element is a raw payload pushed by another client
/// (for example `redis-cli LPUSH`), which reliable_queue delivers as-is with attempts 0. Never
/// throws except std::bad_alloc.
[[nodiscard]] std::optional<envelope> decode_envelope(std::string_view wire);

/// Lower-case hex of an id (32 characters).
[[nodiscard]] std::string to_hex(const message_id& id);

}  // namespace redcoord

REDCOORD_API_END
