#pragma once
/// @file
/// SHA-1 for the names Redis gives scripts (EVALSHA) and for the queue envelope's header check
/// (the same digest as Lua's redis.sha1hex), computed by OpenSSL's libcrypto. Internal to
/// redcoord; not a stable API.

#include <redcoord/core/export.hpp>

#include <array>
#include <string>
#include <string_view>

REDCOORD_API_BEGIN
namespace redcoord::detail {

/// The 20-byte SHA-1 digest of `data`.
/// @throws redcoord::error when libcrypto cannot compute it (out of memory).
[[nodiscard]] std::array<unsigned char, 20> sha1(std::string_view data);

/// The digest as 40 lowercase hex digits (what SCRIPT LOAD answers).
/// @throws redcoord::error as sha1().
[[nodiscard]] std::string sha1_hex(std::string_view data);

}  // namespace redcoord::detail

REDCOORD_API_END
