#pragma once
// fair_lock's Lua scripts (one per step; every value travels as KEYS/ARGV, never in the source).
//
// Keys, all under the resource's hash tag (one Cluster slot): KEYS[1] the lock key (shared with
// distributed_lock: the holder's token; a distributed_lock waiter asks for its release notice
// in `<lock key>:notice`, scripts.hpp),
// the fencing counter (the same INCR scheme as the default lock's acquire script), and the
// queue `<lock key>:queue`, a list of waiter ids in request order. Each queued waiter has a
// lease key `<lock key>:waiter:<id>` (PX waiter_lease, refreshed by its attempts) and a wake-up
// channel `<lock key>:wake:<id>`; the scripts derive both from KEYS[1] and an id, because the
// ids of the other waiters are only known inside the script (same slot, so a Cluster accepts
// them). The queue expires once no live waiter refreshes it, so no key is left without a TTL.
//
// "Purge": dead waiters (lease key gone) are dropped from the head of the queue before any
// decision, so a waiter that died costs the queue at most its lease. Needs Redis >= 6.0.6 (LPOS).

#include <redcoord/core/script.hpp>

namespace redcoord::detail {

// KEYS[1] lock key, KEYS[2] fencing counter, KEYS[3] queue; ARGV[1] waiter id, ARGV[2] token,
// ARGV[3] ttl ms, ARGV[4] waiter lease ms, ARGV[5] mode: "q" (queue: join or stay in the
// queue, refresh the lease) or "l" (last: refused, leave the queue).
// An attempt whose token has a tombstone (fair_leave_script) takes nothing: {0, -1, -1, -1}.
// Otherwise purges, then takes the lock when it is free (or already holds ARGV[2]: a retry whose earlier
// reply was lost) and the queue is empty or headed by me; then returns the fencing token (>= 1).
// Refused, returns {0, holder's PTTL (-2: free), my position (-1: not queued), the head's lease
// PTTL when the lock is free and the head is another waiter (else -1)}, and in that last case
// also PUBLISHes to the head's channel (its turn has come; it may be asleep).
const script& fair_acquire_script();

// KEYS[1] lock key, KEYS[2] queue; ARGV[1] token, optional ARGV[2] waiter id and ARGV[3] lease ms.
// Deletes the lock iff it holds our token (PUBLISHing on `<lock key>:released` when a
// distributed_lock waiter asked for the notice). Without ARGV[2], hands off: purges and PUBLISHes to the
// head's channel. With it (a give-back of an acquisition that does not count), puts that waiter
// back at the head with a fresh lease instead. Returns 1 when deleted, else 0.
const script& fair_release_script();

// KEYS[1] lock key, KEYS[2] queue; ARGV[1] waiter id, ARGV[2] token of the call that leaves,
// optional ARGV[3] a tombstone TTL in ms (after a lost reply).
// Takes the waiter out of the queue and drops its lease; releases the lock if it holds that
// token (an attempt whose reply was lost may have taken it); else, with ARGV[3], leaves
// `<lock key>:gone:<token>` so that attempt, if it arrives later, takes nothing
// (fair_acquire_script honours it); then, if the lock is free, purges and wakes the head.
// Returns 1.
const script& fair_leave_script();

// The extension is the default lock's extend_script() (scripts.hpp): the key holds the
// holder's token.

}  // namespace redcoord::detail
