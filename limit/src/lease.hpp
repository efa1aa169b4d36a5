#pragma once
// What the semaphore's permits and the rw_lock's holds share: a lease's local bookkeeping (its
// validity on the runtime's clock, the loss flag, the watchdog's step) and the acquire loop that
// waits for releases over pub/sub.

#include <redcoord/core/detail/release_waiter.hpp>
#include <redcoord/core/options.hpp>
#include <redcoord/core/runtime_clock.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <string>

namespace redcoord::detail {

// How long a refused waiter's queue entry outlives its sleep: time to wake and ask again.
inline constexpr std::chrono::milliseconds waiter_grace{500};

// One lease as its holder sees it. Not synchronised: its owner guards it.
struct lease_clock {
    // The clock of the validity and the watchdog's due times: the owner's runtime clock
    // (runtime_clock), set when the lease starts; null: the steady clock.
    const runtime_clock* clock = nullptr;
    std::chrono::steady_clock::time_point valid_until;
    bool lost = false;
    // The owner's lock_timing::drift_factor: a validity ends clock_drift(ttl, drift_factor)
    // before the lease does in Redis.
    double drift_factor = 0.01;

    [[nodiscard]] std::chrono::steady_clock::time_point now() const {
        return clock ? clock->now() : std::chrono::steady_clock::now();
    }
    // Starts the validity of a lease of `ttl` whose request was sent at `sent_at`.
    void start(std::chrono::steady_clock::time_point sent_at, std::chrono::milliseconds ttl);
    // Records the answer to an extension sent at `sent_at`: extended restarts the validity,
    // refused (the lease had ended) marks it lost. Returns `extended`.
    bool settle(bool extended, std::chrono::steady_clock::time_point sent_at,
                std::chrono::milliseconds ttl);
    // The watchdog's tick: `extend` (true: extended, false: refused and lost, a throw:
    // unconfirmed) at a third of the ttl, a failed extension retried while the validity lasts,
    // lost at its end. Returns the next due time, or nullopt once lost.
    std::optional<std::chrono::steady_clock::time_point> watchdog_tick(
        std::chrono::milliseconds ttl, const std::function<bool()>& extend);
};

// One attempt of an acquire loop: whether it got what it asked for, and when refused how
// long until the lease it waits for ends (0: none known).
struct wait_attempt {
    bool got = false;
    std::chrono::milliseconds next_free{0};
};

// How an acquire loop waits.
struct wait_policy {
    std::chrono::milliseconds max_retry;  // longest sleep without a known lease end or link
    bool refresh = false;                 // sleep at most max_retry even when a lease end is known
    // Up to this much (uniform) is added to a sleep until a known lease end (lock_timing's
    // retry_jitter), so the waiters of one lease do not all ask in the same millisecond.
    std::chrono::milliseconds retry_jitter{0};
};

// How long a refused attempt sleeps under `policy`: until the awaited lease's end (plus up to
// retry_jitter) when one is known, else max_retry; never longer than max_retry while the
// pub/sub link is down (no release notice can arrive) or when the policy refreshes.
[[nodiscard]] std::chrono::milliseconds refused_sleep(const wait_policy& policy,
                                                      std::chrono::milliseconds next_free,
                                                      bool live);

// The acquire loop: listens for releases before each attempt (so one between the two is not
// missed), attempts under one waiter id (queued by the script once refused), and sleeps until
// a release, the awaited lease's end or the deadline. At the deadline a queued caller makes a
// last attempt in its place, then leaves the queue. Returns whether an attempt got it.
bool wait_for_release(const std::function<release_waiter&()>& waiter,
                      std::chrono::steady_clock::time_point deadline, wait_policy policy,
                      const std::function<wait_attempt(const std::string& waiter_id)>& attempt,
                      const std::function<void(const std::string& waiter_id)>& leave);

}  // namespace redcoord::detail
