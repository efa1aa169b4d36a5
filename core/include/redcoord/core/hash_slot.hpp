#pragma once
/// @file
/// Redis Cluster's key-to-slot mapping, for routing and for tests that must know which node
/// holds a key.

#include <redcoord/core/export.hpp>

#include <cstdint>
#include <string_view>

REDCOORD_API_BEGIN
namespace redcoord {

/// Slots of a Redis Cluster: keys map to [0, cluster_slots).
inline constexpr std::uint16_t cluster_slots = 16384;

/// The CRC16 Redis Cluster hashes keys with (XMODEM: polynomial 0x1021, initial value 0, no
/// reflection), over the bytes of `data`.
[[nodiscard]] std::uint16_t crc16_xmodem(std::string_view data) noexcept;

/// The hash slot of `key`, in [0, 16384): CRC16 of the key modulo 16384, where only the part
/// between the first `{` and the next `}` is hashed when that part is non-empty (a hash tag),
/// so every key of a primitive (`...{name}...`) lands in one slot. Keys are bytes: any value,
/// binary included. Source: the Redis Cluster specification, "Key distribution model" and
/// "Hash tags".
/// @par Thread safety
/// A pure function.
[[nodiscard]] std::uint16_t hash_slot(std::string_view key) noexcept;

}  // namespace redcoord

REDCOORD_API_END
