#pragma once
/// @file
/// Key naming and name validation shared by every part.
///
/// Keys are `<prefix><kind>:{<name>}[:<suffix>]` so all keys of one primitive share a Redis
/// Cluster hash slot; the default prefix is `redcoord:`.

#include <redcoord/core/export.hpp>

#include <cstddef>
#include <string>
#include <string_view>

REDCOORD_API_BEGIN
namespace redcoord {

/// The default key prefix.
inline constexpr std::string_view default_prefix = "redcoord:";
/// The longest name accepted, in bytes.
inline constexpr std::size_t max_name_length = 1024;

/// Checks a user-given name (resource, channel, queue, election).
/// @param name the name to check.
/// @param what what the name names, for the message ("lock name", "channel").
/// @throws invalid_argument when empty, longer than max_name_length, holding CR, LF or NUL, or
///         starting with `}` (it would empty the key's Cluster hash tag).
void validate_name(std::string_view name, std::string_view what);

/// Builds `<prefix><kind>:{<name>}` plus `:<suffix>` when a suffix is given. Does not validate.
[[nodiscard]] std::string make_key(std::string_view prefix, std::string_view kind,
                                   std::string_view name, std::string_view suffix = {});

/// Escapes the glob characters `* ? [ ] \` so `s` matches only itself in a Redis pattern
/// (PSUBSCRIBE, PUBSUB CHANNELS, SCAN MATCH).
[[nodiscard]] std::string glob_escape(std::string_view s);

/// True when `s` holds a glob character (`*`, `?`, `[`, `]`, `\`).
[[nodiscard]] bool has_glob_chars(std::string_view s) noexcept;

}  // namespace redcoord

REDCOORD_API_END
