#pragma once
// How a lock object waits for a lock that someone else holds; one loop for distributed_lock
// and redlock, which differ only in what one attempt is.
//
// Quiet lock (Redisson's tryLock, seed 002): a refused attempt marks the holder's key, the
// waiter sleeps until the release notification (or the holder's PTTL), then tries again
// after a small random delay.
// Busy lock (the holder re-acquires as soon as it releases, or another waiter gets in
// first): the waiter stops marking and polls with a growing random back-off, so a lock that
// changes hands every few hundred microseconds does not publish and wake every waiter on
// each release; it reads the holder (test-and-test-and-set) and tries only when the lock
// looks free. When the same holding outlives a whole back-off, the lock has gone quiet
// again: the waiter marks it and goes back to sleeping until its release.
// The contention level survives from one acquire call to the next (briefly), so a caller
// looping on acquire(timeout) does not ramp up from nothing on every call.

#include "hold_common.hpp"
#include "release_waiter.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include <redcoord/core/errors.hpp>
#include <redcoord/lock/errors.hpp>

namespace redcoord::detail {

// What an attempt asks of a refusal.
enum class ask {
    nothing,  // just try (try_lock's hot path: no extra work on the server)
    holder,   // also report who holds it
    mark,     // report who holds it and mark its key: its release will publish
    look,     // try nothing, only read who holds it (a plain GET: far cheaper than a refused
              // attempt and its clean-up, which is what a waiter polling a busy lock needs)
};

// What a refused attempt (or a look) learned.
struct refusal {
    // One other client holds the lock (redlock: the same holding on a majority of the nodes).
    bool one_holder = false;
    // Its holding's id; empty when not asked for or unknown. Ids from a look and from an
    // attempt are not comparable with one another.
    std::string holder;
    // Its remaining TTL in ms; < 0 when unknown or without expiry.
    std::int64_t pttl = -2;
    // No majority could be reached because nodes are down (refused, reset, erroring): the
    // retry backs off, growing up to max_retry_interval, instead of re-trying every
    // retry_delay against nodes that answer "no" in microseconds.
    bool down = false;
};

struct wait_settings {
    std::chrono::milliseconds retry_delay{5};  // base delay after a refusal with no single holder
    std::chrono::milliseconds retry_jitter{5};  // random extra on retry_delay, on the PTTL fallback
                                                // and (redlock) before the first retry
    std::chrono::milliseconds wake_jitter{1};
    std::chrono::milliseconds max_retry_interval{500};
    std::chrono::milliseconds contention_backoff{10};
    bool jitter_first_retry = false;  // redlock, seed 004 step 5: desynchronise the first retry
    std::size_t retry_count = 0;      // most attempts in one call; zero: no limit
};

// The contention level one lock object carried out of its last acquire call.
struct contention_memory {
    unsigned losses = 0;
    std::string holder;
    std::chrono::steady_clock::time_point at{};
};

// Tries `attempt` until it succeeds (true), the deadline passes or retry_count attempts were
// made (false). `attempt(what, why)` returns true when acquired and otherwise fills `why`
// (with ask::look it never acquires and does not count as an attempt); its exceptions
// propagate. `waiter()` returns the object's release_waiter (started lazily).
// The caller serialises calls for one `memory` (the lock object's local gate).
bool acquire_loop(std::chrono::steady_clock::time_point deadline, const wait_settings& ws,
                  contention_memory& memory, const std::function<release_waiter&()>& waiter,
                  const std::function<bool(ask what, refusal& why)>& attempt);

// A lock object's whole acquire_until(): its local gate, acquire_loop() over its attempts
// and looks, and the commit of what it got. `Lock` (distributed_lock's or redlock's state)
// provides gate, contention, wait_settings(), release_waiter(), look() -> refusal,
// attempt(ask) -> attempt_result {optional<lock_acquisition> got; refusal why; ...},
// commit(const attempt_result&) and not_acquired() (may throw what the last attempt left to
// say; called while the gate is still held, since that state is the gate's). `unlimited`
// ignores retry_count (Lockable::lock()).
template <class Lock>
std::optional<lock_acquisition> gated_acquire(Lock& self, std::chrono::steady_clock::time_point deadline,
                                              bool unlimited = false) {
    if (!self.gate.enter(deadline)) return std::nullopt;
    self.attempt_deadline = deadline;
    self.attempt_timed = deadline > std::chrono::steady_clock::now();
    try {
        typename Lock::attempt_result got;
        auto ws = self.wait_settings();
        if (unlimited) ws.retry_count = 0;
        const bool ok = acquire_loop(
            deadline, ws, self.contention,
            [&self]() -> release_waiter& { return self.release_waiter(); },
            [&](ask what, refusal& why) {
                if (what == ask::look) {
                    why = self.look();
                    return false;
                }
                auto r = self.attempt(what);
                if (!r.got) {
                    why = std::move(r.why);
                    return false;
                }
                got = std::move(r);
                return true;
            });
        if (ok) {
            self.commit(got);
            return got.got;
        }
        self.not_acquired();
    } catch (...) {
        self.gate.leave();
        throw;
    }
    self.gate.leave();
    return std::nullopt;
}

// Lockable::lock() of both lock objects: waits without limit (retry_count does not apply)
// and rides through transient faults (a server down or restarting, a majority unreachable, a
// busy pool, a lost reply), retrying with a growing pause up to `max_pause`, so it returns
// only with the lock held: a std::lock_guard or a condition_variable_any re-lock never runs
// its section without it. Errors that retrying cannot cure (bad credentials, a server that
// refuses the script, a non-Redis peer) propagate.
template <class Lock>
void lock_blocking(Lock& self, std::chrono::milliseconds max_pause) {
    auto pause = std::chrono::milliseconds(10);
    for (;;) {
        try {
            if (gated_acquire(self, forever(), true)) return;
        } catch (const auth_error&) {
            throw;
        } catch (const connection_error&) {  // quorum_unreachable included
        } catch (const timeout_error&) {
        } catch (const pool_exhausted&) {
        } catch (const outcome_unknown&) {
        }
        std::this_thread::sleep_for(pause + jitter(pause));
        pause = std::min(pause * 2, std::max(max_pause, std::chrono::milliseconds(10)));
    }
}

}  // namespace redcoord::detail
