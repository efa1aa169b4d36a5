#pragma once
// The lock's Lua scripts. Every value travels as KEYS/ARGV, never in the source.
//
// The lock key holds the holder's token and nothing else, so a holder of another client (the
// Redlock page's SET NX PX and compare-and-delete) can share a resource with redcoord. A
// refused caller that will wait asks for a release notice in `KEYS[1]:notice`, which holds
// the token of the holding it waits for and lives as long as that holding. Only a release of
// that holding publishes: a lock nobody waits for costs its release no PUBLISH. The notice
// names one holding, so a waiter that loses the race for a release asks again on the next
// holder with its next refused attempt, and a waiter sleeping through another owner's turn is
// not woken by its releases. No script writes a key the caller does not hold.

#include <redcoord/core/detail/fence_lua.hpp>
#include <redcoord/core/script.hpp>

#include <string_view>
#include <vector>

namespace redcoord::detail {

// The sources are the files lock/src/lua/lock_*.lua (each one's header gives its keys,
// arguments and reply). Every script that deletes a holding starts with the fragment
// lock_release_notice.lua; the acquire scripts of every lock kind start with core's
// next_fence.lua (<redcoord/core/detail/fence_lua.hpp>), which the semaphores share.

// KEYS[1] lock key, KEYS[2] fencing counter, with fairness KEYS[3] turn key and KEYS[4]
// waiting key; ARGV[1] token, ARGV[2] ttl in ms, ARGV[3] what a refusal reports: "1" when
// the caller will wait for this holder's release (a refusal asks for its release
// notice), "0" when it only
// wants to know who holds it, "-" (or absent) for the short reply; with fairness ARGV[4] the
// lock object's owner id, ARGV[5] its turn (handoff_after) in ms, ARGV[6] the grace in ms,
// ARGV[7] the token of this object's previous holding whose release was held back ("" for
// none), ARGV[8] that holding's fencing floor ("0": none), ARGV[9] "1" when this object may be
// named in the waiting key (it was refused since its last acquisition), ARGV[10] "1" to honour
// release tombstones (Redlock, see release_script): an attempt whose token was released
// before the attempt reached this node takes nothing.
//
// Re-lock: when the previous holding's key still holds its token, it is renewed in place to
// the new token (a waiter's notice moves to it; an existing fencing counter is first raised to
// the floor)
// instead of being deleted and set again: unlock() followed at once by lock() costs one
// command (lock_core holds such a release back when defer_release is on). If this owner must
// yield, the previous holding is released here (publishing if a waiter asked) and the attempt
// is refused. Where the previous holding is not found, a tombstone is left for its token
// (with ARGV[10]), so an attempt of its own still in flight takes nothing.
// SET NX PX and INCR in one script, so a fencing token exists iff the lock was taken. The
// counter key lives for ttl after it is created (no key without a TTL is left behind,
// however many resources are locked); when it is created anew its first token is the
// server's TIME in microseconds, which exceeds every token of its previous life (those were
// that life's first TIME plus one per acquisition, and a Redis script takes more than a
// microsecond), so tokens keep increasing across its expiry unless the server's clock is set
// back meanwhile. Tokens stay below 2^53 (exact in Lua) until the year 2255.
//
// Bounded unfairness: the turn key names the owner that took the lock last from
// someone else, and lives for turn + grace. While the turn lasts (PTTL > grace) its owner
// re-acquires at will, as with std::mutex. Once it is over, the owner yields: it cannot take
// the free lock while the waiting key names another owner, so a woken waiter gets it; a
// waiter that died stops refreshing the waiting key, which lapses within the grace. Every
// refused caller that will wait (ARGV[3] "0" or "1") names itself in the waiting key for the
// turn left plus the grace, and learns the turn left (so it sleeps through the holder's turn
// instead of waking on each of its releases). The first acquisition by another owner, or the
// owner's own after a turn that ended with nobody waiting, starts a new turn.
//
// Returns the fencing token (an integer >= 1) when acquired. Refused with the short reply,
// returns -2 - PTTL of the holder (<= -1; -3 for an owner that yields); otherwise {0, PTTL,
// holder id, turn left in ms, 1 when yielding else 0}, the holder id being the first 16 hex
// digits of SHA1(holder's token): equal ids tell one holding from another (a holder that
// re-acquired, a split vote) without revealing the token. The success path builds no array.
const script& acquire_script();

// KEYS[1] lock key, optional KEYS[2] fencing counter; ARGV[1] token, ARGV[2] fencing floor
// and ARGV[3] the counter's TTL in ms (both with KEYS[2]; floor "0": none), optional ARGV[4]
// a tombstone TTL in ms: a release that finds the key not ours leaves `KEYS[1]:gone:<token>`
// for that long, so an attempt with that token still in flight on another connection (a
// Redlock round decides at a majority and does not wait for the slower nodes) takes nothing
// when it arrives after its release. Deletes the key iff it holds our token; if a waiter
// asked for its notice, PUBLISHes on KEYS[1] .. ":released" (hold_state::channel). Returns 1
// when deleted, else 0. With the counter, raises an existing counter to at least the floor
// first (redlock: keeps the nodes' counters from falling behind one another, see redlock.hpp);
// an absent one is left to start at TIME.
const script& release_script();

// KEYS[1] lock key; ARGV[1] token, ARGV[2] ttl in ms. PEXPIREs iff the key holds our token
// (and the notice a waiter asked for on it). Returns 1 when extended, 0 when the key is no
// longer ours.
const script& extend_script();

// Every script of the lock part (these and fair_scripts.hpp's): for the ACL rules and the test
// that loads every script on a server.
std::vector<const script*> lock_scripts();

}  // namespace redcoord::detail
