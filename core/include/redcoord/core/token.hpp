#pragma once
/// @file
/// Unguessable identifiers from the kernel CSPRNG (getrandom(2)).

#include <redcoord/core/export.hpp>

#include <cstdint>
#include <string>

REDCOORD_API_BEGIN
namespace redcoord {

/// 20 random bytes from getrandom(2), as 40 lower-case hex characters: lock tokens,
/// consumer, waiter and message ids. Each thread draws kernel randomness 512 bytes at a time
/// and hands each byte out once (wiped after use; a forked child discards what it inherited),
/// so a token costs a system call only every 25 calls.
/// @throws error if the kernel cannot supply randomness.
[[nodiscard]] std::string random_token();

/// A uniformly random 64-bit value from the kernel CSPRNG (jitter, random choices).
[[nodiscard]] std::uint64_t random_u64();

/// A random value in [lo, hi] (inclusive); returns lo when hi <= lo.
[[nodiscard]] std::uint64_t random_between(std::uint64_t lo, std::uint64_t hi);

}  // namespace redcoord

REDCOORD_API_END
