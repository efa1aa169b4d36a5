#pragma once
// The checker server's side of the lock tests' critical sections, shared by their child
// processes: each section reports itself on entry and exit, so overlaps are counted where
// they would hurt (at the "resource").
#include <redcoord/core/script.hpp>

namespace lock_test {

// KEYS: owner, last fencing token, overlaps, stale tokens, entries. ARGV: section id, token.
inline const redcoord::script enter(R"lua(
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('INCR', KEYS[3]) end
redis.call('SET', KEYS[1], ARGV[1])
local last = tonumber(redis.call('GET', KEYS[2]) or '0')
if tonumber(ARGV[2]) <= last then redis.call('INCR', KEYS[4]) else redis.call('SET', KEYS[2], ARGV[2]) end
return redis.call('INCR', KEYS[5])
)lua");

// KEYS: owner, overlaps. ARGV: section id.
inline const redcoord::script leave(R"lua(
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return redis.call('INCR', KEYS[2])
)lua");

}  // namespace lock_test
