#pragma once
// The decisions of semaphore's scripts, without a server: the same steps as
// lua/semaphore_acquire.lua, semaphore_release.lua and semaphore_extend.lua over a model of
// the holders' sorted set, so the unit tests' schedules check what the scripts decide.
// Times are microseconds on the server's clock.
//
// Each held permit is one lease: a member `<token>:<i>` (i = 1..n for an acquisition of n
// permits) scored by the server time its lease ends. A lease counts while now < its end;
// every script first drops the leases that ended, so a dead holder's permits come back
// after its TTL without anyone releasing them.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace redcoord::detail {

struct semaphore_state {
    std::map<std::string, std::int64_t> leases;   // member -> end of lease (server us)
    std::int64_t fence = 0;                       // the fencing counter (0: absent)
    std::map<std::string, std::int64_t> waiters;  // waiter id -> end of its entry (server us)
    std::vector<std::string> queue;  // the fifo option's list of waiter ids, in arrival order
};

// Who asks: a caller that waits names itself (one id per acquire call) so that, once refused,
// it is queued; a caller that is not queued (a first attempt, try_acquire) does not barge in
// ahead of queued waiters: it is admitted only if the free permits leave one for each.
struct semaphore_asker {
    std::string waiter_id;      // "" for a caller that will not wait
    std::int64_t retry_us = 0;  // its longest sleep when no lease end is awaited
    std::int64_t grace_us = 0;  // how long its entry outlives the sleep (time to wake and ask)
    // The fifo option: waiters also join `queue` in arrival order, and only its live head (the
    // first whose entry has not lapsed; dead ones are dropped, queue_head.lua) or a caller
    // when none is queued may take permits.
    bool fifo = false;
};
// A refused waiter's entry lives until the end of the lease it waits for (or its longest
// sleep) plus the grace: as long as it sleeps, so a waiter that died holds newcomers back no
// longer than that, and a permit comes free at that lease's end anyway.

struct semaphore_acquired {
    bool acquired = false;
    std::int64_t fencing_token = 0;  // when acquired
    std::uint64_t held = 0;          // live permits after the attempt
    // When refused: microseconds until enough leases end for this attempt, if none is
    // released first (the waiter's fallback timer).
    std::int64_t next_free_us = 0;
};

// Acquires `n` permits of `limit` for `token`, each with a lease of `ttl_us`.
[[nodiscard]] semaphore_acquired semaphore_acquire(semaphore_state& s, std::int64_t now_us,
                                                   const std::string& token, std::uint64_t n,
                                                   std::uint64_t limit, std::int64_t ttl_us,
                                                   const semaphore_asker& who = {});
// Releases `token`'s n permits; returns how many were still held.
std::uint64_t semaphore_release(semaphore_state& s, const std::string& token, std::uint64_t n);
// Extends `token`'s n leases to now + ttl iff all n are still live; otherwise the holding is
// lost and its remaining permits are released. Returns true when extended.
bool semaphore_extend(semaphore_state& s, std::int64_t now_us, const std::string& token,
                      std::uint64_t n, std::int64_t ttl_us);

// Live permits at `now_us` (what the invariant counts).
[[nodiscard]] std::uint64_t semaphore_live(const semaphore_state& s, std::int64_t now_us);

// The member naming permit i (1-based) of an acquisition.
[[nodiscard]] std::string semaphore_member(const std::string& token, std::uint64_t i);

}  // namespace redcoord::detail
