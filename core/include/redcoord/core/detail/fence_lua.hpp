#pragma once
/// @file
/// Internal to redcoord, not a stable API: the fencing counter's Lua, shared by every script
/// that hands out fencing tokens (locks, semaphores), so they all follow one counter rule.

#include <redcoord/core/export.hpp>

REDCOORD_API_BEGIN
namespace redcoord::detail {

// Lua defining next_fence(ttl): the next fencing token from the counter KEYS[2], which lives
// for `ttl` ms after it is created; when it is created anew its first token is the server's
// TIME in microseconds, which exceeds every token of its previous life (those were that
// life's first TIME plus one per acquisition, and a script takes more than a microsecond), so
// tokens keep increasing across its expiry unless the server's clock is set back meanwhile.
// Tokens stay below 2^53 (exact in Lua) until the year 2255. Prepend it to a script's source.
// The source is core/src/lua/next_fence.lua.
extern const char* const next_fence_lua;

}  // namespace redcoord::detail

REDCOORD_API_END
