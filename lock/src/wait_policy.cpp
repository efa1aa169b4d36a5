#include "wait_policy.hpp"

#include <algorithm>
#include <utility>

namespace redcoord::detail {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using type = wait_action::type;

std::chrono::microseconds jitter(std::chrono::milliseconds upto, const random_source& rnd) {
    if (upto.count() <= 0) return microseconds(0);
    const auto us = static_cast<std::uint64_t>(std::chrono::duration_cast<microseconds>(upto).count());
    return microseconds(static_cast<std::int64_t>(rnd(0, us)));
}

std::chrono::microseconds contention_backoff(unsigned losses, std::chrono::milliseconds cap, const random_source& rnd) {
    if (losses == 0 || cap.count() <= 0) return microseconds(0);
    const auto cap_us = std::chrono::duration_cast<microseconds>(cap).count();
    const auto shift = std::min(losses - 1, 20u);
    const auto upto = std::min<std::int64_t>(cap_us, std::int64_t{250} << shift);
    return microseconds(static_cast<std::int64_t>(rnd(0, static_cast<std::uint64_t>(upto))));
}

wait_policy::wait_policy(const wait_settings& ws, contention_memory& memory, lock_clock::time_point deadline,
                         random_source rnd)
    : ws_(ws), memory_(memory), deadline_(deadline), rnd_(std::move(rnd)) {}

bool wait_policy::over(lock_clock::time_point now) const {
    return now >= deadline_ || (ws_.retry_count > 0 && attempts_ >= ws_.retry_count);
}

wait_action wait_policy::attempt(ask what, stage next) {
    ++attempts_;
    stage_ = next;
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

wait_action wait_policy::finish(bool acquired, lock_clock::time_point now) {
    // A holder that won a busy lock keeps its contention level fresh while it re-acquires:
    // once someone else gets in, it resumes backing off instead of marking and waking.
    if (acquired && memory_.losses > 0) memory_.at = now;
    stage_ = stage::done;
    wait_action a;
    a.acquired = acquired;
    return a;
}

void wait_policy::remember(lock_clock::time_point now) {
    memory_.losses = losses_;
    memory_.holder = last_holder_;
    memory_.at = now;
}

wait_action wait_policy::start(lock_clock::time_point now) {
    // A call that starts soon after this object lost a race resumes backing off.
    resume_ = memory_.losses > 0 && now - memory_.at < 2 * ws_.contention_backoff;
    const bool will_wait = now < deadline_;
    return attempt(resume_ ? ask::holder : will_wait ? ask::mark : ask::nothing, stage::first_attempt);
}

wait_action wait_policy::loop(lock_clock::time_point now) {
    if (over(now)) return finish(false, now);
    if (!subscribed_) {
        // Subscribe, then retry: the holder may have released before the subscription.
        subscribed_ = true;
        stage_ = stage::loop_subscribed;
        return wait_action{type::subscribe};
    }
    if (last_.down) {
        // A majority down: wait for it with a growing pause (never spinning), earlier if a
        // release is announced meanwhile.
        down_pause_ = std::min<lock_clock::duration>(std::max<lock_clock::duration>(down_pause_ * 2, ws_.retry_delay),
                                                     ws_.max_retry_interval);
        return wait(now + down_pause_ + jitter(ws_.retry_jitter, rnd_), stage::loop_attempt);
    }
    down_pause_ = lock_clock::duration::zero();
    if (losses_ == 0 && !last_.one_holder) {
        // Split vote, failing nodes or an attempt given back: retry after a random delay
        // (seed 004, step 5), earlier if a release is announced meanwhile.
        return wait(now + ws_.retry_delay + jitter(ws_.retry_jitter, rnd_), stage::loop_attempt);
    }
    if (losses_ == 0) {
        // Our refusal marked the holder's key: sleep until its release, or its PTTL as a
        // fallback (kept short while no notification link is up, see on_attempt).
        return wait(now + wait_slice_, stage::holder_wait);
    }
    // Busy lock: back off, deaf to releases, then look before trying.
    return pause(now + contention_backoff(losses_, ws_.contention_backoff, rnd_), true, stage::busy_pause);
}

wait_action wait_policy::on_attempt(bool acquired, const refusal& why, lock_clock::time_point now, bool live) {
    if (acquired) return finish(true, now);
    last_ = why;
    wait_slice_ = ws_.max_retry_interval;
    if (why.pttl >= 0) {
        wait_slice_ = milliseconds(why.pttl) + jitter(ws_.retry_jitter, rnd_);
        if (!live) wait_slice_ = std::min<lock_clock::duration>(wait_slice_, ws_.max_retry_interval);
    }
    switch (stage_) {
        case stage::first_attempt:
            if (resume_ && !over(now)) {
                subscribed_ = true;
                losses_ = memory_.losses;
                last_holder_ = memory_.holder;
                stage_ = stage::resume_subscribed;
                return wait_action{type::subscribe};
            }
            return loop(now);
        case stage::holder_attempt:
            if (woke_ && ws_.contention_backoff.count() > 0) {
                // Released and taken again at once, or caught mid-hand-over.
                losses_ = 1;
                last_holder_.clear();
                remember(now);
            }
            return loop(now);
        case stage::busy_attempt:
            ++losses_;  // someone else got in first
            last_holder_.clear();
            remember(now);
            return loop(now);
        case stage::busy_mark_attempt: remember(now); return loop(now);
        default: return loop(now);
    }
}

wait_action wait_policy::on_look(const refusal& seen_holder, lock_clock::time_point now) {
    if (!seen_holder.one_holder) return attempt(ask::holder, stage::busy_attempt);
    if (seen_holder.holder == last_holder_) {
        // The same holding outlived the whole back-off: the lock has gone quiet. Mark it and
        // go back to sleeping until its release.
        losses_ = 0;
        if (!over(now)) return attempt(ask::mark, stage::busy_mark_attempt);
    } else {
        ++losses_;
        last_holder_ = seen_holder.holder;
    }
    remember(now);
    return loop(now);
}

wait_action wait_policy::on_subscribed(lock_clock::time_point now) {
    if (stage_ == stage::resume_subscribed) return loop(now);
    // seed 004 step 5: desynchronise the first retry of clients refused together.
    if (ws_.jitter_first_retry) return pause(now + jitter(ws_.retry_jitter, rnd_), false, stage::first_retry_pause);
    return attempt(ask::mark, stage::loop_attempt);
}

wait_action wait_policy::on_waited(bool woke, lock_clock::time_point now) {
    if (stage_ != stage::holder_wait) return attempt(ask::mark, stage::loop_attempt);
    woke_ = woke;
    // Waiters woken together spread out a little so one of them wins outright.
    if (woke) return pause(now + jitter(ws_.wake_jitter, rnd_), true, stage::wake_pause);
    return attempt(ask::mark, stage::holder_attempt);
}

wait_action wait_policy::on_paused(lock_clock::time_point) {
    switch (stage_) {
        case stage::busy_pause: stage_ = stage::busy_look; return wait_action{type::look};
        case stage::wake_pause: return attempt(ask::mark, stage::holder_attempt);
        default: return attempt(ask::mark, stage::loop_attempt);  // first_retry_pause
    }
}

}  // namespace redcoord::detail
