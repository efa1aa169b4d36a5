#include "fair_engine.hpp"

#include "lock_engine.hpp"

#include <redcoord/core/detail/lease_schedule.hpp>

#include <algorithm>

namespace redcoord::detail {

using std::chrono::milliseconds;

namespace {
// A key's PTTL says how long it has left, rounded down: waking a millisecond later finds it gone.
constexpr milliseconds expiry_margin{1};
// The first pause of lock() after an error; it doubles up to the refresh period.
constexpr milliseconds first_pause{10};
}  // namespace

fair_engine::fair_engine(fair_settings s, fair_clock::time_point now,
                         fair_clock::time_point deadline, bool unlimited, bool subscribed)
    : s_(s), deadline_(unlimited ? fair_clock::time_point::max() : std::max(deadline, now)),
      unlimited_(unlimited), subscribed_(subscribed) {}

milliseconds fair_engine::refresh_period() const noexcept {
    // The waiter's place is a lease of its own, renewed as any lease (no drift: only its
    // period is used).
    return lease_schedule(s_.waiter_lease, 0.0).renew_period();
}

fair_step fair_engine::start(fair_clock::time_point now) { return attempt(now); }

fair_step fair_engine::attempt(fair_clock::time_point now) {
    fair_step st;
    st.what = fair_do::attempt;
    last_sent_ = past_deadline(now);
    st.mode = last_sent_ ? fair_mode::last : fair_mode::queue;
    // A queue attempt whose reply is lost may have queued me; a last one leaves me where I was.
    if (!last_sent_) queued_ = true;
    return st;
}

fair_step fair_engine::wait_until(fair_clock::time_point until, bool listen,
                                  fair_clock::time_point now) const {
    fair_step st;
    st.what = fair_do::wait;
    st.listen = listen;
    st.until = std::max(std::min(until, deadline_), now);
    return st;
}

fair_step fair_engine::on_granted(std::uint64_t fence, std::size_t acks,
                                  fair_clock::time_point sent, fair_clock::time_point now) {
    pause_ = milliseconds(0);
    queued_ = false;  // the script took me out of the queue with the lock
    const auto until = lease_schedule(s_.ttl, s_.drift_factor).valid_until(sent);
    const bool unconfirmed = s_.replicas > 0 && acks < s_.replicas;
    if (unconfirmed || now >= until) {
        // It does not count. A waiter that may go on waiting goes back to the head of the
        // queue with it (its turn has come; the ones behind must not overtake it).
        fair_step st;
        st.what = fair_do::give_back;
        st.requeue = !last_sent_ && !past_deadline(now);
        if (st.requeue) {
            queued_ = true;
            lease_due_ = now + refresh_period();
        }
        return st;
    }
    fence_ = fence;
    valid_until_ = until;
    fair_step st;
    st.what = fair_do::acquired;
    return st;
}

fair_step fair_engine::on_given_back(fair_clock::time_point now) {
    if (!queued_) {
        fair_step st;
        st.what = fair_do::timed_out;
        return st;
    }
    // Replicas did not acknowledge (or the reply came too late): try again after the replica
    // timeout, deaf to notifications (nobody else can take the lock meanwhile: I am the head).
    return wait_until(std::min(now + s_.replica_timeout, lease_due_), false, now);
}

fair_step fair_engine::on_refused(const fair_refusal& r, fair_clock::time_point sent,
                                  fair_clock::time_point now) {
    pause_ = milliseconds(0);
    if (last_sent_) {
        queued_ = false;  // a refused last attempt leaves the queue in the same script
        fair_step st;
        st.what = fair_do::timed_out;
        return st;
    }
    queued_ = true;
    lease_due_ = sent + refresh_period();
    if (!subscribed_) {
        fair_step st;
        st.what = fair_do::subscribe;
        return st;
    }
    auto until = lease_due_;
    // The head wakes when a holder that died (and so publishes nothing) expires.
    if (r.position == 0 && r.pttl >= 0)
        until = std::min(until, now + milliseconds(r.pttl) + expiry_margin);
    // The one right behind a head whose turn has come wakes when that head's lease runs out:
    // if the head died, that attempt purges it and takes the lock.
    if (r.position == 1 && r.head_lease >= 0)
        until = std::min(until, now + milliseconds(r.head_lease) + expiry_margin);
    return wait_until(until, true, now);
}

fair_step fair_engine::on_subscribed(bool, fair_clock::time_point now) {
    subscribed_ = true;
    // Re-check at once: a hand-off published before the subscription was confirmed is lost.
    return attempt(now);
}

fair_step fair_engine::on_wake(bool, fair_clock::time_point now) {
    // A notification (my turn may have come), the lease refresh, the holder's or the head's
    // expiry, the end of a pause, or the deadline (then the last attempt): all mean "attempt".
    return attempt(now);
}

void fair_engine::cancel(fair_clock::time_point now) noexcept {
    unlimited_ = false;
    deadline_ = std::min(deadline_, now);
}

fair_step fair_engine::on_error(fair_clock::time_point now) {
    if (!unlimited_) {
        fair_step st;
        st.what = queued_ ? fair_do::leave : fair_do::timed_out;
        return st;
    }
    pause_ = std::min(pause_.count() == 0 ? first_pause : pause_ * 2, refresh_period());
    return wait_until(now + pause_, subscribed_, now);
}

}  // namespace redcoord::detail
