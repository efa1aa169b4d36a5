#pragma once
// The lock's Lua scripts. Every value travels as KEYS/ARGV, never in the source.

#include <redcoord/core/script.hpp>

namespace redcoord::detail {

// KEYS[1] lock key, KEYS[2] fencing counter; ARGV[1] token, ARGV[2] ttl in ms, ARGV[3] "1" to
// identify the holder. Returns {1, fencing token} when acquired, else {0, PTTL of the current
// holder, holder id}: the holder id is the first 16 hex digits of SHA1(holder's token) with
// ARGV[3] == "1" (redlock: tells a real majority holder from a split vote without revealing
// the token), else empty.
// SET NX PX and INCR in one script, so a fencing token exists iff the lock was taken.
const script& acquire_script();

// KEYS[1] lock key, KEYS[2] fencing counter; ARGV[1] token, ARGV[2] fencing floor ("0": none),
// ARGV[3] channel to PUBLISH on when the key was ours and got deleted ("": none; redlock's
// clean-up of a failed attempt must not wake other waiters, who would retry and fail in turn).
// Returns 1 when the key held our token and was deleted, else 0 (nothing deleted).
// With a floor, raises the counter to at least that value first (redlock: keeps the nodes'
// counters from falling behind one another, see redlock.hpp).
const script& release_script();

// KEYS[1] lock key; ARGV[1] token, ARGV[2] ttl in ms. PEXPIREs iff the key holds our token.
// Returns 1 when extended, 0 when the key is no longer ours.
const script& extend_script();

}  // namespace redcoord::detail
