// detail::link_policy without a server or a clock: fake times in, decisions out.

#include <redcoord/core/detail/link_policy.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>

using redcoord::detail::link_policy;
using namespace std::chrono_literals;
using health = link_policy::health;

namespace {

const link_policy::time_point t0 = link_policy::time_point{} + 1000h;

link_policy make(std::chrono::milliseconds min = 20ms, std::chrono::milliseconds max = 1000ms,
                 std::chrono::milliseconds hi = 1000ms, std::chrono::milliseconds drain = 0ms) {
    return link_policy({min, max, hi, drain});
}

}  // namespace

TEST(LinkPolicy, BackoffDoublesUpToTheMaximumWithJitterOfUpToHalf) {
    auto p = make(20ms, 1000ms);
    // random 0: no jitter; the delays are the bare backoff.
    const std::chrono::milliseconds expected[] = {20ms,  40ms,  80ms,   160ms,
                                                  320ms, 640ms, 1000ms, 1000ms};
    for (auto e : expected) {
        EXPECT_EQ(p.retry_at(t0, 0) - t0, e);
    }
    // The largest jitter is half the backoff.
    auto q = make(20ms, 1000ms);
    EXPECT_EQ(q.retry_at(t0, 10) - t0, 30ms);  // 20 + 10 % 11
    EXPECT_EQ(q.retry_at(t0, 20) - t0, 60ms);  // 40 + 20 % 21
    EXPECT_EQ(q.retry_at(t0, 41) - t0, 80ms);  // 80 + 41 % 41
}

TEST(LinkPolicy, OnlyASessionThatLastedResetsTheBackoff) {
    auto p = make(20ms, 1000ms);
    (void)p.retry_at(t0, 0);
    (void)p.retry_at(t0, 0);
    EXPECT_EQ(p.backoff(), 80ms);
    // Killed right after subscribing (C5): the backoff keeps growing.
    p.linked(t0);
    EXPECT_EQ(p.retry_at(t0 + 999ms, 0) - (t0 + 999ms), 80ms);
    EXPECT_EQ(p.backoff(), 160ms);
    // Up for reconnect_max: back to the minimum.
    p.linked(t0 + 2s);
    EXPECT_EQ(p.retry_at(t0 + 3s, 0) - (t0 + 3s), 20ms);
    EXPECT_EQ(p.backoff(), 40ms);
    // A failed dial (no session) is not a session that lasted.
    EXPECT_EQ(p.retry_at(t0 + 10s, 0) - (t0 + 10s), 40ms);
}

TEST(LinkPolicy, HugeDelaysSaturateInsteadOfOverflowing) {
    const auto huge = std::chrono::milliseconds::max();
    auto p = make(huge / 4, huge, huge);
    for (int i = 0; i < 4; ++i) {
        const auto due = p.retry_at(t0, std::numeric_limits<std::uint64_t>::max());
        EXPECT_GE(due, t0);
    }
    p.linked(t0);
    EXPECT_EQ(p.check(t0 + 1000h), health::ok);
    auto due = p.next_due(t0, true);
    ASSERT_TRUE(due);
    EXPECT_GT(*due, t0 + 1000h);
}

TEST(LinkPolicy, PingsAnIdleLinkAndGivesUpAfterThreeSilentIntervals) {
    auto p = make(20ms, 1000ms, 100ms);
    p.linked(t0);
    EXPECT_EQ(p.check(t0 + 99ms), health::ok);
    EXPECT_EQ(p.next_due(t0, true), t0 + 100ms);
    EXPECT_EQ(p.check(t0 + 100ms), health::ping);
    p.pinged(t0 + 100ms);
    EXPECT_EQ(p.check(t0 + 150ms), health::ok);
    EXPECT_EQ(p.next_due(t0 + 100ms, true), t0 + 200ms);
    EXPECT_EQ(p.check(t0 + 200ms), health::ping);
    p.pinged(t0 + 200ms);
    p.pinged(t0 + 300ms);
    // Exactly three intervals is not yet silence; one tick more is.
    EXPECT_EQ(p.check(t0 + 300ms), health::ok);
    EXPECT_EQ(p.next_due(t0 + 300ms, true), t0 + 300ms + link_policy::duration(1));
    EXPECT_EQ(p.check(t0 + 300ms + link_policy::duration(1)), health::silent);
}

TEST(LinkPolicy, DataKeepsTheLinkHealthyAndOldNewsIsIgnored) {
    auto p = make(20ms, 1000ms, 100ms);
    p.linked(t0);
    p.heard(t0 + 80ms);
    EXPECT_EQ(p.check(t0 + 150ms), health::ok);  // data 70 ms ago
    EXPECT_EQ(p.check(t0 + 180ms), health::ping);
    p.heard(t0 + 10ms);  // a helper's older read, reported late
    EXPECT_EQ(p.last_heard(), t0 + 80ms);
    EXPECT_EQ(p.check(t0 + 380ms), health::ping);  // exactly three intervals
    EXPECT_EQ(p.check(t0 + 381ms), health::silent);
    // A new session starts the clocks over.
    p.linked(t0 + 400ms);
    EXPECT_EQ(p.check(t0 + 450ms), health::ok);
}

TEST(LinkPolicy, NoHealthIntervalNoChecksAndNoTimers) {
    auto p = make(20ms, 1000ms, 0ms);
    p.linked(t0);
    EXPECT_EQ(p.check(t0 + 1000h), health::ok);
    EXPECT_FALSE(p.next_due(t0, true).has_value());
}

TEST(LinkPolicy, DrainIntervalDoublesWhileDrainsFindNothingUpToSixteenTimes) {
    auto p = make(20ms, 1000ms, 0ms, 5ms);
    ASSERT_TRUE(p.lazy());
    p.linked(t0);
    p.unwatched(t0);
    EXPECT_EQ(p.next_drain(), t0 + 5ms);
    EXPECT_EQ(p.next_due(t0, false), t0 + 5ms);
    auto now = t0 + 5ms;
    const std::chrono::milliseconds expected[] = {10ms, 20ms, 40ms, 80ms, 80ms};
    for (auto e : expected) {
        p.drained(now, false);
        EXPECT_EQ(p.drain_interval(), e);
        EXPECT_EQ(p.next_drain(), now + e);
        now += e;
    }
    p.drained(now, true);
    EXPECT_EQ(p.drain_interval(), 5ms);
    EXPECT_FALSE(make().lazy());
}

TEST(LinkPolicy, AWatchingLazyLinkLooksAtItsDemandAgainWithinOneTick) {
    // Health off: one second, unless sixteen drains are sooner.
    auto a = make(20ms, 1000ms, 0ms, 60000ms);
    a.linked(t0);
    EXPECT_EQ(a.next_due(t0, true), t0 + 1s);
    auto b = make(20ms, 1000ms, 0ms, 10ms);
    b.linked(t0);
    EXPECT_EQ(b.next_due(t0, true), t0 + 160ms);
    // With a health interval, that interval bounds it (and the ping is due then anyway).
    auto c = make(20ms, 1000ms, 300ms, 60000ms);
    c.linked(t0);
    EXPECT_EQ(c.next_due(t0, true), t0 + 300ms);
    // Not watching: the next drain or the health check, whichever is first.
    c.unwatched(t0);
    EXPECT_EQ(c.next_due(t0, false), t0 + 300ms);
    auto d = make(20ms, 1000ms, 300ms, 7ms);
    d.linked(t0);
    d.unwatched(t0 + 1ms);
    EXPECT_EQ(d.next_due(t0 + 1ms, false), t0 + 8ms);
}

// A driver that wakes only at next_due() or when data arrives, over random schedules of
// data, silences, sessions and failures: it never lets a link sit idle past one interval
// without a PING, declares silence exactly when nothing came for more than three intervals,
// never before, and every redial delay stays within [reconnect_min, 1.5 x reconnect_max].
TEST(LinkPolicy, RandomSchedulesKeepTheInvariants) {
    for (std::uint64_t seed = 1; seed <= 2000; ++seed) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        std::mt19937_64 rnd(seed);
        auto ms = [&](int lo, int hi) {
            return std::chrono::milliseconds(std::uniform_int_distribution<int>(lo, hi)(rnd));
        };
        const auto min = ms(1, 50), max = min + ms(0, 2000),
                   hi = ms(0, 3) == 0ms ? 0ms : ms(10, 500);
        auto p = make(min, max, hi);
        auto now = t0;
        p.linked(now);
        auto last_data = now, last_send = now;
        for (int step = 0; step < 60; ++step) {
            // The next data, if the server talks at all in this stretch.
            const bool talks = ms(0, 1) == 1ms;
            const auto data_at = now + ms(1, 4 * static_cast<int>(std::max(hi, 100ms).count()));
            const auto due = p.next_due(now, true);
            if (hi == 0ms) ASSERT_FALSE(due);
            auto wake = talks ? data_at : (due ? *due : data_at);
            if (due && *due < wake) wake = *due;
            ASSERT_GE(wake, now);
            now = wake;
            if (talks && now == data_at) {
                p.heard(now);
                last_data = now;
            }
            const auto h = p.check(now);
            const bool silent_for_real = hi > 0ms && now - last_data > 3 * hi;
            ASSERT_EQ(h == health::silent, silent_for_real);
            if (h == health::silent) {
                const auto retry = p.retry_at(now, rnd());
                ASSERT_GE(retry - now, std::chrono::duration_cast<link_policy::duration>(min));
                ASSERT_LE(retry - now,
                          std::chrono::duration_cast<link_policy::duration>(max + max / 2));
                now = retry;
                p.linked(now);
                last_data = last_send = now;
                continue;
            }
            if (h == health::ping) {
                p.pinged(now);
                last_send = now;
            }
            // Woken at next_due(), the driver never leaves the link idle past one interval.
            if (hi > 0ms)
                ASSERT_LE(now - std::max(last_data, last_send), link_policy::duration(hi));
            ASSERT_GE(p.backoff(), min);
            ASSERT_LE(p.backoff(), max);
        }
    }
}
