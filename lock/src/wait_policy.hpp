#pragma once
// How a lock object waits for a lock that someone else holds, as a state machine without I/O:
// it says what to do next (attempt, subscribe, wait for a release, pause) and is told what
// came of it and the time. acquire_loop() drives it with a release_waiter and real sleeps;
// tests drive it with scripted outcomes and a fake clock.
//
// A refused attempt marks the holder's key (its release will publish) and tells the holder's
// turn (scripts.hpp: while its turn lasts, a holder re-acquires at will; once it is over, it
// yields to the waiters). The waiter sleeps until the release notification (or the holder's
// PTTL), then tries again after a small random delay, shorter the more releases it has lost
// already, so the longest waiter tends to win. Only a call's first refusal listens for a
// release while the holder's turn lasts (that holder may be done with the lock). A refusal
// within a turn that follows a release the waiter woke for and lost, a turn it slept through
// or its own yield means the lock streams from holder to holder: the waiter sleeps, deaf to
// releases, until that turn is over, so a lock that changes hands every few hundred
// microseconds does not wake every waiter on each release. An owner whose turn is over and
// finds the free lock reserved for waiters pauses briefly (growing), so a woken waiter gets
// in; a waiter that died lets the lock go after the grace. A split vote (Redlock) retries
// after retry_delay + jitter; a majority down is waited
// for with a pause growing from retry_delay to max_retry_interval.

#include "lock_engine.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>

namespace redcoord::detail {

struct wait_settings {
    std::chrono::milliseconds retry_delay{5};   // base delay after a refusal with no single holder
    std::chrono::milliseconds retry_jitter{5};  // random extra on retry_delay, on the PTTL fallback
                                                // and (redlock) before the first retry
    std::chrono::milliseconds wake_jitter{1};
    std::chrono::milliseconds max_retry_interval{500};
    // redlock, the Redlock page's step 5: desynchronise the first retry
    bool jitter_first_retry = false;
    std::size_t retry_count = 0;  // most attempts in one call; zero: no limit
};

// A uniform random value in [lo, hi] (the kernel's in production, a seeded one in tests).
using random_source = std::function<std::uint64_t(std::uint64_t lo, std::uint64_t hi)>;

// Random delay in [0, upto], microsecond resolution.
std::chrono::microseconds jitter(std::chrono::microseconds upto, const random_source& rnd);

// The delay between a release notification and the retry of a waiter that has lost `lost`
// such races in this call: random in [0, wake_jitter / 2^min(lost, 4)].
std::chrono::microseconds wake_delay(std::chrono::milliseconds wake_jitter, unsigned lost,
                                     const random_source& rnd);

// What the driver does next.
struct wait_action {
    enum class type {
        attempt,    // one acquire round asking `what`; report with on_attempt()
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
    // One acquire call ending at `deadline`. `rnd` draws the jitter.
    wait_policy(const wait_settings& ws, lock_clock::time_point deadline, random_source rnd);

    wait_action start(lock_clock::time_point now);
    // The attempt acquired (true) or was refused for `why`. `live`: a notification link is
    // up (when none is, a sleep until the holder's PTTL is kept short).
    wait_action on_attempt(bool acquired, const refusal& why, lock_clock::time_point now,
                           bool live);
    wait_action on_subscribed(lock_clock::time_point now);
    // `woke`: a release notification ended the wait.
    wait_action on_waited(bool woke, lock_clock::time_point now);
    wait_action on_paused(lock_clock::time_point now);

    [[nodiscard]] std::size_t attempts() const noexcept { return attempts_; }

    // The shortest and longest pause of an owner that yields.
    static constexpr std::chrono::microseconds min_yield_pause{250};
    static constexpr std::chrono::microseconds max_yield_pause{4000};

private:
    enum class stage {
        first_attempt,
        subscribed,
        first_retry_pause,
        attempting,
        holder_wait,
        wake_pause,
        turn_pause,
        after_turn,
        done,
    };
    [[nodiscard]] bool over(lock_clock::time_point now) const;
    wait_action attempt(ask what);
    wait_action wait(lock_clock::time_point until, stage next);
    wait_action pause(lock_clock::time_point until, bool forget, stage next);
    wait_action finish(bool acquired);
    wait_action loop(lock_clock::time_point now);

    wait_settings ws_;
    lock_clock::time_point deadline_;
    random_source rnd_;
    stage stage_ = stage::first_attempt;
    std::size_t attempts_ = 0;
    refusal last_;  // what the last attempt's refusal said
    bool subscribed_ = false;
    bool woke_ = false;    // the last holder wait ended with a release notification
    bool barged_ = false;  // ... and the holder took the lock again within its turn
    unsigned lost_ = 0;    // releases this call woke for and lost
    lock_clock::duration
        down_pause_{};  // the pause after the last attempt that found a majority down
    lock_clock::duration yield_pause_{};  // the last pause of an owner that yields
    lock_clock::duration wait_slice_{};   // how long to sleep on the last refusal's holder
};

}  // namespace redcoord::detail
