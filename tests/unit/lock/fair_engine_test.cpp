// fair_engine without a server: scripted replies and a fake clock, no sleeps.
#include "fair_engine.hpp"
#include "lock_engine.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>

using namespace std::chrono_literals;
using namespace redcoord::detail;
using std::chrono::milliseconds;

namespace {

const fair_clock::time_point t0 = fair_clock::time_point{} + std::chrono::hours(1);

fair_settings settings(milliseconds lease = 900ms) {
    fair_settings s;
    s.ttl = 10s;
    s.drift_factor = 0.01;
    s.waiter_lease = lease;
    return s;
}

fair_refusal held(std::int64_t position, std::int64_t pttl = 5000) { return {pttl, position, -1}; }

}  // namespace

TEST(FairEngine, ZeroWaitIsOneLastAttemptAndNeverQueues) {
    fair_engine e(settings(), t0, t0, false, false);
    auto s = e.start(t0);
    ASSERT_EQ(s.what, fair_do::attempt);
    EXPECT_EQ(s.mode, fair_mode::last);
    EXPECT_FALSE(e.maybe_queued());
    s = e.on_refused({5000, -1, -1}, t0, t0 + 1ms);
    EXPECT_EQ(s.what, fair_do::timed_out);
    EXPECT_FALSE(e.maybe_queued());
}

TEST(FairEngine, GrantGivesFenceAndValidityFromTheSendTime) {
    fair_engine e(settings(), t0, t0 + 1s, false, false);
    auto s = e.start(t0);
    ASSERT_EQ(s.mode, fair_mode::queue);
    EXPECT_TRUE(e.maybe_queued());  // a lost reply may have queued it
    s = e.on_granted(42, 0, t0, t0 + 3ms);
    ASSERT_EQ(s.what, fair_do::acquired);
    EXPECT_EQ(e.fence(), 42u);
    EXPECT_EQ(e.valid_until(), t0 + 10s - clock_drift(10s, 0.01));
    EXPECT_FALSE(e.maybe_queued());
}

TEST(FairEngine, FirstRefusalSubscribesThenRechecksBeforeSleeping) {
    fair_engine e(settings(), t0, t0 + 10s, false, false);
    (void)e.start(t0);
    auto s = e.on_refused(held(2), t0, t0 + 1ms);
    ASSERT_EQ(s.what, fair_do::subscribe);
    s = e.on_subscribed(true, t0 + 2ms);
    ASSERT_EQ(s.what, fair_do::attempt);  // a hand-off published before the confirmation is lost
    EXPECT_EQ(s.mode, fair_mode::queue);
    s = e.on_refused(held(2), t0 + 2ms, t0 + 3ms);
    ASSERT_EQ(s.what, fair_do::wait);
    EXPECT_TRUE(s.listen);
    EXPECT_EQ(s.until, t0 + 2ms + 300ms);  // the lease refresh, from the send time
}

TEST(FairEngine, SubscribedWaiterSleepsAtOnce) {
    fair_engine e(settings(), t0, t0 + 10s, false, true);
    (void)e.start(t0);
    auto s = e.on_refused(held(3), t0, t0 + 1ms);
    ASSERT_EQ(s.what, fair_do::wait);
}

TEST(FairEngine, HeadWakesWhenAHolderThatDiedExpires) {
    fair_engine e(settings(), t0, t0 + 10s, false, true);
    (void)e.start(t0);
    auto s = e.on_refused(held(0, 50), t0, t0 + 1ms);
    ASSERT_EQ(s.what, fair_do::wait);
    EXPECT_EQ(s.until, t0 + 1ms + 51ms);
    // Not the head: the holder's expiry is the head's business.
    fair_engine f(settings(), t0, t0 + 10s, false, true);
    (void)f.start(t0);
    EXPECT_EQ(f.on_refused(held(1, 50), t0, t0 + 1ms).until, t0 + 300ms);
    // A holder without expiry: the refresh only.
    fair_engine g(settings(), t0, t0 + 10s, false, true);
    (void)g.start(t0);
    EXPECT_EQ(g.on_refused(held(0, -1), t0, t0 + 1ms).until, t0 + 300ms);
}

TEST(FairEngine, TheOneBehindAHeadWhoseTurnCameWakesAtThatHeadsLeaseEnd) {
    fair_engine e(settings(), t0, t0 + 10s, false, true);
    (void)e.start(t0);
    auto s = e.on_refused({-2, 1, 120}, t0, t0 + 1ms);
    EXPECT_EQ(s.until, t0 + 1ms + 121ms);
    // Further back: only the refresh (the one right behind covers it).
    fair_engine f(settings(), t0, t0 + 10s, false, true);
    (void)f.start(t0);
    EXPECT_EQ(f.on_refused({-2, 2, 120}, t0, t0 + 1ms).until, t0 + 300ms);
    // A head lease longer than the refresh: the refresh comes first.
    fair_engine g(settings(), t0, t0 + 10s, false, true);
    (void)g.start(t0);
    EXPECT_EQ(g.on_refused({-2, 1, 800}, t0, t0 + 1ms).until, t0 + 300ms);
}

TEST(FairEngine, NotificationAndTimerBothMeanAttempt) {
    fair_engine e(settings(), t0, t0 + 10s, false, true);
    (void)e.start(t0);
    (void)e.on_refused(held(1), t0, t0 + 1ms);
    auto s = e.on_wake(true, t0 + 50ms);
    EXPECT_EQ(s.what, fair_do::attempt);
    EXPECT_EQ(s.mode, fair_mode::queue);
    (void)e.on_refused(held(1), t0 + 50ms, t0 + 51ms);
    s = e.on_wake(false, t0 + 350ms);
    EXPECT_EQ(s.what, fair_do::attempt);
    EXPECT_EQ(s.mode, fair_mode::queue);
}

TEST(FairEngine, DeadlineCapsTheWaitThenOneLastAttemptLeavesTheQueue) {
    fair_engine e(settings(), t0, t0 + 100ms, false, true);
    (void)e.start(t0);
    auto s = e.on_refused(held(4), t0, t0 + 1ms);
    ASSERT_EQ(s.what, fair_do::wait);
    EXPECT_EQ(s.until, t0 + 100ms);
    s = e.on_wake(false, t0 + 100ms);
    ASSERT_EQ(s.what, fair_do::attempt);
    EXPECT_EQ(s.mode, fair_mode::last);
    EXPECT_TRUE(e.maybe_queued());  // until the last attempt's reply says otherwise
    s = e.on_refused({5000, -1, -1}, t0 + 100ms, t0 + 101ms);
    EXPECT_EQ(s.what, fair_do::timed_out);
    EXPECT_FALSE(e.maybe_queued());
}

TEST(FairEngine, LastAttemptCanStillWin) {
    fair_engine e(settings(), t0, t0 + 100ms, false, true);
    (void)e.start(t0);
    (void)e.on_refused(held(0), t0, t0 + 1ms);
    auto s = e.on_wake(true, t0 + 120ms);  // woken late, past the deadline
    ASSERT_EQ(s.mode, fair_mode::last);
    s = e.on_granted(7, 0, t0 + 120ms, t0 + 121ms);
    EXPECT_EQ(s.what, fair_do::acquired);
}

TEST(FairEngine, UnacknowledgedGrantIsGivenBackAndTheWaiterStaysAtTheHead) {
    auto st = settings();
    st.replicas = 1;
    st.replica_timeout = 100ms;
    fair_engine e(st, t0, t0 + 10s, false, true);
    (void)e.start(t0);
    auto s = e.on_granted(9, 0, t0, t0 + 101ms);
    ASSERT_EQ(s.what, fair_do::give_back);
    EXPECT_TRUE(s.requeue);
    EXPECT_TRUE(e.maybe_queued());
    s = e.on_given_back(t0 + 102ms);
    ASSERT_EQ(s.what, fair_do::wait);
    EXPECT_FALSE(s.listen);
    EXPECT_EQ(s.until, t0 + 202ms);
    s = e.on_wake(false, t0 + 202ms);
    ASSERT_EQ(s.what, fair_do::attempt);
    s = e.on_granted(10, 1, t0 + 202ms, t0 + 250ms);
    EXPECT_EQ(s.what, fair_do::acquired);
    EXPECT_EQ(e.fence(), 10u);
}

TEST(FairEngine, UnacknowledgedLastGrantIsGivenBackAndTheCallEnds) {
    auto st = settings();
    st.replicas = 2;
    fair_engine e(st, t0, t0, false, true);
    (void)e.start(t0);
    auto s = e.on_granted(9, 1, t0, t0 + 1ms);
    ASSERT_EQ(s.what, fair_do::give_back);
    EXPECT_FALSE(s.requeue);
    EXPECT_EQ(e.on_given_back(t0 + 2ms).what, fair_do::timed_out);
    EXPECT_FALSE(e.maybe_queued());
}

TEST(FairEngine, GrantWhoseValidityPassedDoesNotCount) {
    fair_engine e(settings(), t0, t0 + 60s, false, true);
    (void)e.start(t0);
    auto s = e.on_granted(3, 0, t0, t0 + 10s);  // the reply took the whole TTL
    EXPECT_EQ(s.what, fair_do::give_back);
    EXPECT_TRUE(s.requeue);
}

TEST(FairEngine, TimedErrorLeavesOnlyWhenMaybeQueued) {
    fair_engine e(settings(), t0, t0 + 1s, false, true);
    (void)e.start(t0);
    EXPECT_EQ(e.on_error(t0 + 1ms).what, fair_do::leave);
    fair_engine z(settings(), t0, t0, false, true);
    (void)z.start(t0);
    EXPECT_EQ(z.on_error(t0 + 1ms).what, fair_do::timed_out);
}

TEST(FairEngine, CancelEndsTheWaitLikeItsDeadline) {
    fair_engine e(settings(), t0, t0, true, true);  // even lock()'s unlimited wait
    (void)e.start(t0);
    (void)e.on_refused(held(2), t0, t0 + 1ms);
    e.cancel(t0 + 5ms);
    auto s = e.on_wake(true, t0 + 5ms);
    ASSERT_EQ(s.what, fair_do::attempt);
    EXPECT_EQ(s.mode, fair_mode::last);
    EXPECT_EQ(e.on_refused({100, -1, -1}, t0 + 5ms, t0 + 6ms).what, fair_do::timed_out);
    EXPECT_FALSE(e.maybe_queued());
    // Cancelled before it starts: a single last attempt.
    fair_engine f(settings(), t0, t0 + 10s, false, true);
    f.cancel(t0);
    EXPECT_EQ(f.start(t0).mode, fair_mode::last);
}

TEST(FairEngine, LockRidesThroughErrorsWithAPauseGrowingToTheRefreshPeriod) {
    fair_engine e(settings(300ms), t0, t0, true, true);
    auto now = t0;
    auto s = e.start(now);
    ASSERT_EQ(s.mode, fair_mode::queue);  // unlimited: never a last attempt
    const milliseconds expected[] = {10ms, 20ms, 40ms, 80ms, 100ms, 100ms};
    for (auto p : expected) {
        s = e.on_error(now);
        ASSERT_EQ(s.what, fair_do::wait);
        EXPECT_EQ(s.until - now, p);
        now = s.until;
        s = e.on_wake(false, now);
        ASSERT_EQ(s.what, fair_do::attempt);
        EXPECT_EQ(s.mode, fair_mode::queue);
    }
    (void)e.on_refused(held(1), now, now);  // a reply resets the pause
    s = e.on_wake(false, now + 100ms);
    EXPECT_EQ(e.on_error(now + 100ms).until - (now + 100ms), 10ms);
}

// Random schedules: random settings, replies, reply times, notifications and late wake-ups.
// Invariants: no wait past the deadline nor into the past; a queued waiter's next attempt is
// due within the refresh period of its last one (its lease never lapses while it lives);
// listening waits only once subscribed; a subscription is followed by a re-check; the last
// attempt comes exactly when the deadline has passed; a call never ends queued; an acquisition
// is valid and its validity counts from the send time; timed calls end soon after the deadline.
TEST(FairEngine, RandomSchedulesKeepTheInvariants) {
    for (std::uint32_t seed = 1; seed <= 20000; ++seed) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        std::mt19937_64 rng(seed);
        auto pick = [&](std::int64_t lo, std::int64_t hi) {
            return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
        };
        auto chance = [&](int percent) { return pick(1, 100) <= percent; };
        fair_settings st;
        st.ttl = milliseconds(pick(10, 60000));
        st.drift_factor = 0.01;
        st.waiter_lease = milliseconds(pick(3, 3000));
        st.replicas = chance(20) ? static_cast<std::size_t>(pick(1, 2)) : 0;
        st.replica_timeout = milliseconds(pick(1, 200));
        bool unlimited = chance(20);
        bool subscribed = chance(50);
        auto now = t0;
        auto deadline = now + milliseconds(pick(0, 5000));
        fair_engine e(st, now, deadline, unlimited, subscribed);
        const auto refresh = e.refresh_period();
        ASSERT_EQ(refresh, std::max(st.waiter_lease / 3, 1ms));

        auto step = e.start(now);
        fair_clock::time_point lease_due = fair_clock::time_point::max();  // while queued
        bool ended = false;
        bool expect_attempt = false;
        bool after_error = false;  // an error's pause: the lease may have lapsed already
        int steps = 0;
        for (; steps < 3000 && !ended; ++steps) {
            if (expect_attempt) ASSERT_EQ(step.what, fair_do::attempt);
            expect_attempt = false;
            switch (step.what) {
                case fair_do::attempt: {
                    ASSERT_EQ(step.mode == fair_mode::last, !unlimited && now >= deadline);
                    const auto sent = now;
                    now += chance(5) ? milliseconds(pick(0, 2000))
                                     : std::chrono::microseconds(pick(50, 20000));
                    const int r = static_cast<int>(pick(1, 100));
                    after_error = false;
                    if (r <= 8) {
                        const auto acks = static_cast<std::size_t>(pick(0, 2));
                        step = e.on_granted(static_cast<std::uint64_t>(pick(1, 1000000)), acks,
                                            sent, now);
                        if (step.what == fair_do::acquired) {
                            ASSERT_FALSE(st.replicas > 0 && acks < st.replicas);
                            ASSERT_EQ(e.valid_until(),
                                      sent + st.ttl - clock_drift(st.ttl, st.drift_factor));
                            ASSERT_GT(e.valid_until(), now);
                        } else {
                            ASSERT_EQ(step.what, fair_do::give_back);
                            ASSERT_EQ(step.requeue, e.maybe_queued());
                            if (step.requeue) lease_due = now + refresh;
                        }
                    } else if (r <= 16) {
                        after_error = true;
                        step = e.on_error(now);
                        if (!unlimited) {
                            ASSERT_TRUE(step.what == fair_do::leave ||
                                        step.what == fair_do::timed_out);
                            ASSERT_EQ(step.what == fair_do::leave, e.maybe_queued());
                            ended = true;
                        } else {
                            ASSERT_EQ(step.what, fair_do::wait);
                            ASSERT_LE(step.until, now + refresh);
                        }
                    } else {
                        fair_refusal f;
                        f.pttl = chance(30) ? -2 : (chance(5) ? -1 : pick(0, 30000));
                        f.position = sent >= deadline && !unlimited ? -1 : pick(0, 5);
                        f.head_lease = f.pttl == -2 && f.position != 0 ? pick(0, 3000) : -1;
                        const bool was_last = step.mode == fair_mode::last;
                        step = e.on_refused(f, sent, now);
                        if (was_last) {
                            ASSERT_EQ(step.what, fair_do::timed_out);
                        } else {
                            lease_due = sent + refresh;
                            if (!subscribed) ASSERT_EQ(step.what, fair_do::subscribe);
                        }
                    }
                    break;
                }
                case fair_do::subscribe:
                    ASSERT_FALSE(subscribed);
                    subscribed = true;
                    now += std::chrono::microseconds(pick(0, 5000));
                    step = e.on_subscribed(chance(90), now);
                    expect_attempt = true;
                    break;
                case fair_do::wait: {
                    ASSERT_GE(step.until, now);
                    if (!unlimited) ASSERT_LE(step.until, std::max(deadline, now));
                    if (step.listen) ASSERT_TRUE(subscribed);
                    if (e.maybe_queued() && !after_error)
                        ASSERT_LE(step.until, std::max(lease_due, now));
                    bool notified = false;
                    if (chance(2)) {  // a stop request during the wait
                        e.cancel(now);
                        deadline = unlimited ? now : std::min(deadline, now);
                        unlimited = false;
                    }
                    if (step.listen && chance(30)) {
                        now += (step.until - now) * pick(0, 100) /
                               100;  // a notification in the window
                        notified = true;
                    } else {
                        now = step.until +
                              (chance(10) ? std::chrono::microseconds(pick(0, 50000)) : 0us);
                    }
                    step = e.on_wake(notified, now);
                    expect_attempt = true;
                    break;
                }
                case fair_do::give_back:
                    now += std::chrono::microseconds(pick(0, 5000));
                    step = e.on_given_back(now);
                    ASSERT_TRUE(step.what == fair_do::wait || step.what == fair_do::timed_out);
                    if (step.what == fair_do::wait) ASSERT_FALSE(step.listen);
                    if (step.what == fair_do::timed_out) ended = true;
                    break;
                case fair_do::acquired:
                    ASSERT_FALSE(e.maybe_queued());
                    ended = true;
                    break;
                case fair_do::timed_out:
                    ASSERT_FALSE(unlimited);
                    ASSERT_FALSE(e.maybe_queued());
                    ended = true;
                    break;
                case fair_do::leave:
                    ASSERT_FALSE(unlimited);
                    ended = true;
                    break;
            }
        }
        if (!unlimited) {
            ASSERT_TRUE(ended) << "a timed call did not end";
            // It ended within a few round trips of the deadline (our fake ones: up to 2 s each).
            ASSERT_LE(now, std::max(deadline, t0) + 10s);
        }
    }
}
