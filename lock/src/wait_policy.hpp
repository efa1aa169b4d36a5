#pragma once
// How a lock object waits for a lock that someone else holds, as a state machine without I/O:
// it says what to do next (attempt, look, subscribe, wait for a release, pause) and is told
// what came of it and the time. acquire_loop() drives it with a release_waiter and real sleeps;
// tests drive it with scripted outcomes and a fake clock.
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
// A majority down is waited for with a pause growing from retry_delay to max_retry_interval.

#include "lock_engine.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace redcoord::detail {

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
    lock_clock::time_point at{};
};

// A uniform random value in [lo, hi] (the kernel's in production, a seeded one in tests).
using random_source = std::function<std::uint64_t(std::uint64_t lo, std::uint64_t hi)>;

// Random delay in [0, upto], microsecond resolution.
std::chrono::microseconds jitter(std::chrono::milliseconds upto, const random_source& rnd);

// Random back-off after `losses` consecutive lost races for a just-released lock: uniform in
// [0, min(cap, 250 us * 2^(losses - 1))]; zero for no loss or a zero cap. It bounds how often
// a waiter that keeps losing to a re-acquiring holder tries (no herd on every release).
std::chrono::microseconds contention_backoff(unsigned losses, std::chrono::milliseconds cap, const random_source& rnd);

// What the driver does next.
struct wait_action {
    enum class type {
        attempt,    // one acquire round asking `what`; report with on_attempt()
        look,       // read who holds it; report with on_look()
        subscribe,  // start (or re-arm) the release notifications; report with on_subscribed()
        wait,       // sleep until `until` or a release notification; report with on_waited()
        pause,      // sleep until `until`, deaf to releases; report with on_paused()
        done,       // finished: `acquired` tells how
    };
    type what_to_do = type::done;
    ask what = ask::nothing;
    lock_clock::time_point until{};
    // pause: releases announced during it do not cut the next wait short (the driver reads
    // the notification generation after it).
    bool forget_releases = false;
    bool acquired = false;
};

class wait_policy {
public:
    // One acquire call ending at `deadline`; `memory` is the lock object's (the caller
    // serialises its calls). `rnd` draws the jitter.
    wait_policy(const wait_settings& ws, contention_memory& memory, lock_clock::time_point deadline, random_source rnd);

    wait_action start(lock_clock::time_point now);
    // The attempt acquired (true) or was refused for `why`. `live`: a notification link is
    // up (when none is, a sleep until the holder's PTTL is kept short).
    wait_action on_attempt(bool acquired, const refusal& why, lock_clock::time_point now, bool live);
    wait_action on_look(const refusal& seen_holder, lock_clock::time_point now);
    wait_action on_subscribed(lock_clock::time_point now);
    // `woke`: a release notification ended the wait.
    wait_action on_waited(bool woke, lock_clock::time_point now);
    wait_action on_paused(lock_clock::time_point now);

    [[nodiscard]] std::size_t attempts() const noexcept { return attempts_; }

private:
    enum class stage {
        first_attempt, resume_subscribed, loop_subscribed, first_retry_pause, loop_attempt,
        holder_wait, wake_pause, holder_attempt, busy_pause, busy_look, busy_attempt, busy_mark_attempt, done,
    };
    [[nodiscard]] bool over(lock_clock::time_point now) const;
    wait_action attempt(ask what, stage next);
    wait_action wait(lock_clock::time_point until, stage next);
    wait_action pause(lock_clock::time_point until, bool forget, stage next);
    wait_action finish(bool acquired, lock_clock::time_point now);
    wait_action loop(lock_clock::time_point now);
    void remember(lock_clock::time_point now);

    wait_settings ws_;
    contention_memory& memory_;
    lock_clock::time_point deadline_;
    random_source rnd_;
    stage stage_ = stage::first_attempt;
    std::size_t attempts_ = 0;
    refusal last_;             // what the last attempt's refusal said
    bool resume_ = false;      // started backing off, as the last call ended
    bool subscribed_ = false;
    bool woke_ = false;        // the holder wait ended with a release notification
    unsigned losses_ = 0;      // consecutive races lost to a busy lock
    std::string last_holder_;  // the holding that refused the last of them
    lock_clock::duration down_pause_{};  // the pause after the last attempt that found a majority down
    lock_clock::duration wait_slice_{};  // how long to sleep on the last refusal's holder
};

}  // namespace redcoord::detail
