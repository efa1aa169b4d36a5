#pragma once
// The decisions of one fair_lock acquire call, without I/O (sans-I/O, as lock_engine and
// wait_policy): what to send next (an attempt that queues or a last one, a give-back, a leave,
// a subscription), how long to wait for the hand-off notification, when the waiter's lease is
// due for a refresh, and what the deadline ends. The driver (fair_lock.cpp) runs the scripts of
// fair_scripts.hpp and the waits; tests feed scripted replies and a fake clock.
//
// The waiting discipline (Redisson's RFairLock idea, with leases instead of its timeout set):
// - a queued waiter holds a lease key that its attempts refresh (PX waiter_lease); it must
//   attempt again at most waiter_lease / 3 after its last attempt was sent, whether or not a
//   notification came, so a live waiter never loses its place and a dead one is skipped once
//   its lease runs out;
// - the release unicasts to the head of the queue; besides that, the head wakes when the
//   holder's PTTL runs out (a holder that died publishes nothing), and the waiter right behind
//   a head whose turn has come (the lock is free) wakes when that head's lease runs out (the
//   head may be dead: its attempt then purges it and takes the lock);
// - a waiter subscribes to its channel after its first refusal and attempts once more before
//   it sleeps, so a hand-off published before the subscription was confirmed is not missed;
// - at the deadline it makes one last attempt that, refused, also takes it out of the queue
//   (one round trip), so a timed-out waiter never delays the ones behind it;
// - lock() (no deadline) rides through errors with a pause growing up to waiter_lease / 3;
//   timed calls leave the queue and report the error (the driver does both).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace redcoord::detail {

using fair_clock = std::chrono::steady_clock;

struct fair_settings {
    std::chrono::milliseconds ttl{30000};          // the lock's lease (PX)
    double drift_factor = 0.01;                    // validity = ttl - elapsed - drift
    std::chrono::milliseconds waiter_lease{1000};  // a queued waiter's lease (PX)
    std::size_t replicas = 0;                      // WAIT acknowledgements an acquisition needs
    std::chrono::milliseconds replica_timeout{100};
};

// How an attempt asks.
enum class fair_mode {
    queue,  // take the lock if it is my turn, else join (or stay in) the queue and refresh my lease
    last,   // take the lock if it is my turn, else leave the queue (a zero wait, a deadline)
};

// A refused attempt's reply.
struct fair_refusal {
    std::int64_t pttl = -2;      // the holder's PTTL in ms; -2: the lock is free; -1: no expiry
    std::int64_t position = -1;  // my place in the queue (0: head); -1: not queued
    std::int64_t head_lease =
        -1;  // the lock is free and the head is another waiter: its lease's PTTL
};

enum class fair_do {
    attempt,  // run the acquire script in `mode`
    subscribe,  // start listening on my channel (wait for the confirmation briefly), then on_subscribed()
    wait,  // wait until `until`; a notification ends it earlier when `listen` (then on_wake(true))
    give_back,  // an acquisition that does not count: compare-and-delete it; `requeue`: back at the head
    leave,      // take me out of the queue (best effort), then the call ends
    acquired,   // done: the lock is held (see acquired_fence(), valid_until())
    timed_out,  // done: not acquired, not queued
};

struct fair_step {
    fair_do what = fair_do::attempt;
    fair_mode mode = fair_mode::queue;
    fair_clock::time_point until{};
    bool listen = true;
    bool requeue = false;
};

class fair_engine {
public:
    // `deadline` <= `now`: one last attempt. `unlimited`: lock(), which never times out and rides
    // through errors. `subscribed`: the waiter's channel is already being listened on.
    fair_engine(fair_settings s, fair_clock::time_point now, fair_clock::time_point deadline,
                bool unlimited, bool subscribed);

    // The first step.
    fair_step start(fair_clock::time_point now);
    // The attempt sent at `sent` was granted with fencing token `fence`; `acks`: the replicas
    // that acknowledged it (ignored unless settings.replicas > 0).
    fair_step on_granted(std::uint64_t fence, std::size_t acks, fair_clock::time_point sent,
                         fair_clock::time_point now);
    // The attempt sent at `sent` was refused.
    fair_step on_refused(const fair_refusal& r, fair_clock::time_point sent,
                         fair_clock::time_point now);
    // The subscription is started (`confirmed`: the server confirmed it).
    fair_step on_subscribed(bool confirmed, fair_clock::time_point now);
    // A wait ended: by a notification (`notified`) or at its `until`.
    fair_step on_wake(bool notified, fair_clock::time_point now);
    // The give-back was sent (whatever came of it).
    fair_step on_given_back(fair_clock::time_point now);
    // An attempt failed (connection, timeout, busy pool). Only for an unlimited engine: a timed
    // call leaves the queue (when maybe_queued()) and reports the error instead.
    fair_step on_error(fair_clock::time_point now);

    // The caller wants to stop waiting (a stop request): from now on the call ends as at its
    // deadline, with one last attempt (which may still win) that takes it out of the queue.
    void cancel(fair_clock::time_point now) noexcept;

    // True when the server may hold me in its queue (a queue attempt was sent and no reply, or a
    // refusal, has taken me out since): a call that ends otherwise must leave.
    [[nodiscard]] bool maybe_queued() const noexcept { return queued_; }
    // After `acquired`: the acquisition's fencing token and validity.
    [[nodiscard]] std::uint64_t fence() const noexcept { return fence_; }
    [[nodiscard]] fair_clock::time_point valid_until() const noexcept { return valid_until_; }
    // How often a queued waiter's attempts refresh its lease.
    [[nodiscard]] std::chrono::milliseconds refresh_period() const noexcept;

private:
    fair_step attempt(fair_clock::time_point now);
    fair_step wait_until(fair_clock::time_point until, bool listen,
                         fair_clock::time_point now) const;
    [[nodiscard]] bool past_deadline(fair_clock::time_point now) const noexcept {
        return !unlimited_ && now >= deadline_;
    }

    fair_settings s_;
    fair_clock::time_point deadline_;
    bool unlimited_;
    bool subscribed_;
    bool queued_ = false;
    bool last_sent_ = false;              // the attempt under way is the last one
    fair_clock::time_point lease_due_{};  // the next attempt is due by then (queued)
    std::chrono::milliseconds pause_{0};  // unlimited: the current error pause
    std::uint64_t fence_ = 0;
    fair_clock::time_point valid_until_{};
};

}  // namespace redcoord::detail
