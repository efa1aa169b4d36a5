#pragma once
/// @file
/// Internal to redcoord, not a stable API: the FIFO waiting list's Lua, shared by the scripts
/// that queue leased waiters in arrival order (fair_lock, the semaphore's fifo option), so
/// they skip dead waiters by one rule.

#include <redcoord/core/export.hpp>

REDCOORD_API_BEGIN
namespace redcoord::detail {

// Lua defining queue_head(queue, me, alive): pops the dead waiters (alive(id) false) other
// than `me` off the head of the list `queue` and returns the live head, or false. Each
// including script says what alive means (fair_lock: the waiter's lease key exists; the
// semaphore: its entry in the waiters' sorted set has not lapsed). Prepend it to a script's
// source. The source is core/src/lua/queue_head.lua.
extern const char* const queue_head_lua;

}  // namespace redcoord::detail

REDCOORD_API_END
