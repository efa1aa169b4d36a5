#include "wait_policy.hpp"

#include <algorithm>
#include <utility>

namespace redcoord::detail {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using type = wait_action::type;

std::chrono::microseconds jitter(std::chrono::microseconds upto, const random_source& rnd) {
    if (upto.count() <= 0) return microseconds(0);
    return microseconds(
        static_cast<std::int64_t>(rnd(0, static_cast<std::uint64_t>(upto.count()))));
}

std::chrono::microseconds wake_delay(std::chrono::milliseconds wake_jitter, unsigned lost,
                                     const random_source& rnd) {
    return jitter(std::chrono::duration_cast<microseconds>(wake_jitter) / (1 << std::min(lost, 4u)),
                  rnd);
}

wait_policy::wait_policy(const wait_settings& ws, lock_clock::time_point deadline,
                         random_source rnd)
    : ws_(ws), deadline_(deadline), rnd_(std::move(rnd)) {}

bool wait_policy::over(lock_clock::time_point now) const {
    return now >= deadline_ || (ws_.retry_count > 0 && attempts_ >= ws_.retry_count);
}

wait_action wait_policy::attempt(ask what) {
    ++attempts_;
    stage_ = stage::attempting;
    wait_action a;
    a.what_to_do = type::attempt;
    a.what = what;
    return a;
}

wait_action wait_policy::wait(lock_clock::time_point until, stage next) {
    stage_ = next;
    wait_action a;
    a.what_to_do = type::wait;
    a.until = std::min(until, deadline_);
    return a;
}

wait_action wait_policy::pause(lock_clock::time_point until, bool forget, stage next) {
    stage_ = next;
    wait_action a;
    a.what_to_do = type::pause;
    a.until = std::min(until, deadline_);
    a.forget_releases = forget;
    return a;
}

wait_action wait_policy::finish(bool acquired) {
    stage_ = stage::done;
    wait_action a;
    a.acquired = acquired;
    return a;
}

wait_action wait_policy::start(lock_clock::time_point now) {
    const auto a = attempt(now < deadline_ ? ask::mark : ask::nothing);
    stage_ = stage::first_attempt;
    return a;
}

wait_action wait_policy::loop(lock_clock::time_point now) {
    if (over(now)) return finish(false);
    if (!subscribed_) {
        // Subscribe, then retry: the holder may have released before the subscription.
        subscribed_ = true;
        stage_ = stage::subscribed;
        return wait_action{type::subscribe};
    }
    if (last_.down) {
        // A majority down: wait for it with a growing pause (never spinning), earlier if a
        // release is announced meanwhile.
        down_pause_ = std::min<lock_clock::duration>(
            std::max<lock_clock::duration>(down_pause_ * 2, ws_.retry_delay),
            ws_.max_retry_interval);
        return wait(now + down_pause_ + jitter(ws_.retry_jitter, rnd_), stage::attempting);
    }
    down_pause_ = lock_clock::duration::zero();
    if (last_.yielding) {
        // Our turn is over and someone waits: give a woken waiter the time to get in.
        yield_pause_ =
            std::clamp<lock_clock::duration>(yield_pause_ * 2, min_yield_pause, max_yield_pause);
        return pause(now + yield_pause_, true, stage::attempting);
    }
    yield_pause_ = lock_clock::duration::zero();
    if (!last_.one_holder) {
        // Split vote, failing nodes or an attempt given back: retry after a random delay
        // (the Redlock page's step 5, docs/references.md), earlier if a release is announced meanwhile.
        return wait(now + ws_.retry_delay + jitter(ws_.retry_jitter, rnd_), stage::attempting);
    }
    if (barged_) {
        // Released and taken again by its holder within its turn: sleep through the rest of
        // the turn instead of waking on each of its releases.
        return pause(now + milliseconds(last_.turn_left) + wake_delay(ws_.wake_jitter, lost_, rnd_),
                     true, stage::turn_pause);
    }
    // Our refusal marked the holder's key: sleep until its release, or its PTTL as a
    // fallback (kept short while no notification link is up, see on_attempt).
    return wait(now + wait_slice_, stage::holder_wait);
}

wait_action wait_policy::on_attempt(bool acquired, const refusal& why, lock_clock::time_point now,
                                    bool live) {
    if (acquired) return finish(true);
    // A refusal that follows a release we woke for, our own yield or a turn we slept through
    // means the lock is streaming from holder to holder: another holder's turn is slept
    // through. Only a call's first refusal listens for a release within a turn (its holder
    // may be done with the lock).
    const bool streaming =
        std::exchange(woke_, false) || last_.yielding || stage_ == stage::after_turn;
    last_ = why;
    if (streaming && !last_.yielding) ++lost_;
    barged_ = streaming && why.one_holder && why.turn_left > 0;
    wait_slice_ = ws_.max_retry_interval;
    if (why.pttl >= 0) {
        wait_slice_ = milliseconds(why.pttl) + jitter(ws_.retry_jitter, rnd_);
        if (!live)
            wait_slice_ = std::min<lock_clock::duration>(wait_slice_, ws_.max_retry_interval);
    }
    return loop(now);
}

wait_action wait_policy::on_subscribed(lock_clock::time_point now) {
    // The Redlock page's step 5 ("retry"): desynchronise the first retry of clients refused together.
    if (ws_.jitter_first_retry)
        return pause(now + jitter(ws_.retry_jitter, rnd_), false, stage::first_retry_pause);
    return attempt(ask::mark);
}

wait_action wait_policy::on_waited(bool woke, lock_clock::time_point now) {
    if (stage_ != stage::holder_wait) return attempt(ask::mark);
    // Waiters woken together spread out a little so one of them wins outright; those that
    // lost more releases go sooner.
    if (woke) {
        woke_ = true;
        return pause(now + wake_delay(ws_.wake_jitter, lost_, rnd_), true, stage::wake_pause);
    }
    return attempt(ask::mark);
}

wait_action wait_policy::on_paused(lock_clock::time_point) {
    const bool turn = stage_ == stage::turn_pause;
    auto a = attempt(ask::mark);
    if (turn) stage_ = stage::after_turn;
    return a;
}

}  // namespace redcoord::detail
