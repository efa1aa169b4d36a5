// The reliable queue's consumer lease engine at its edges, without a server: which move a pop
// sends, how long blocks and reply deadlines are, renewals, lease losses, settle retries,
// retirement and the periodic upkeep. Fake clock, no sleeps.
#include "consumer_lease.hpp"
#include "seconds_arg.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace redcoord::detail;
using namespace std::chrono_literals;
using std::chrono::milliseconds;
using time_point = consumer_lease::time_point;

namespace {

// An arbitrary steady-clock instant far from the clock's epoch (an unknown lease is the epoch).
const time_point t0 = time_point{} + std::chrono::hours(1000);

lease_timing timing(milliseconds vt = 1000ms, milliseconds hb = 200ms, milliseconds ri = 500ms) {
    return {vt, hb, ri, true};
}

// Successor ids "c~1", "c~2", ... as the driver's random suffixes would be.
consumer_lease make(lease_timing t = timing()) {
    return consumer_lease(t, "c", [n = 0]() mutable { return "c~" + std::to_string(++n); });
}

// Starts the consumer at `now` the way the driver does: register, then begin the upkeep.
consumer_lease started(time_point now, lease_timing t = timing()) {
    auto l = make(t);
    l.renewed(l.starting().who, now, true);
    l.started(now);
    return l;
}

}  // namespace

TEST(ConsumerLease, RenewalCountsFromItsSendTimeAndNeverShortensTheBound) {
    auto l = make();
    const auto me = l.current().who;
    EXPECT_EQ(l.lease_until(me), time_point{});
    EXPECT_FALSE(l.renewed(me, t0));
    EXPECT_EQ(l.lease_until(me), t0 + 1000ms);
    // A renewal sent earlier whose reply came late does not pull the bound back.
    EXPECT_FALSE(l.renewed(me, t0 - 300ms));
    EXPECT_EQ(l.lease_until(me), t0 + 1000ms);
    l.renewed(me, t0 + 10ms);
    EXPECT_EQ(l.lease_until(me), t0 + 1010ms);
}

TEST(ConsumerLease, Q4_LeaseFoundGoneBeforeItsBoundStopsPlainMoves) {
    auto l = make();
    const auto me = l.current().who;
    // The first registration finds nothing (a new consumer): not a loss.
    EXPECT_FALSE(l.renewed(me, t0, false));
    EXPECT_FALSE(l.distrusts_lease());
    // Found gone after its bound had passed: an ordinary lapse (a stalled heartbeat).
    EXPECT_FALSE(l.renewed(me, t0 + 1500ms, false));
    EXPECT_FALSE(l.distrusts_lease());
    // Found gone while the bound said it holds (eviction, clock step, DEL): a loss.
    EXPECT_TRUE(l.renewed(me, t0 + 2000ms, false));
    EXPECT_TRUE(l.distrusts_lease());
    auto p = l.begin_pop(t0 + 2000ms, 0ms);
    EXPECT_EQ(l.plan_move(p, t0 + 2000ms, false, 1000ms).kind, move_kind::renew_then_move);
}

TEST(ConsumerLease, PlainMoveOnlyWhenTheLeaseOutlivesTheBlockByTheMargin) {
    auto l = make(timing(1000ms));
    const auto me = l.current().who;
    ASSERT_EQ(l.margin(), 250ms);
    l.renewed(me, t0);  // lease until t0 + 1000
    // Non-blocking: plain while 1000 - elapsed > 250.
    {
        auto p = l.begin_pop(t0, 0ms);
        EXPECT_EQ(l.plan_move(p, t0 + 749ms, false, 0ms).kind, move_kind::plain);
    }
    {
        auto p = l.begin_pop(t0, 0ms);
        EXPECT_EQ(l.plan_move(p, t0 + 750ms, false, 0ms).kind,
                  move_kind::renew_then_move);  // exactly the margin
    }
    // Blocking 400 ms (cap: half the visibility timeout = 500): plain while 1000 - e > 650.
    {
        auto p = l.begin_pop(t0, 400ms);
        const auto m = l.plan_move(p, t0, false, 0ms);
        EXPECT_EQ(m.block, 400ms);
        EXPECT_EQ(m.kind, move_kind::plain);
    }
    {
        auto p = l.begin_pop(t0 + 350ms, 400ms);
        const auto m = l.plan_move(p, t0 + 350ms, false, 0ms);
        EXPECT_EQ(m.block, 400ms);
        EXPECT_EQ(m.kind, move_kind::renew_then_move);
    }
    {
        auto p = l.begin_pop(t0 + 349ms, 400ms);
        EXPECT_EQ(l.plan_move(p, t0 + 349ms, false, 0ms).kind, move_kind::plain);
    }
    // No lease known: always with a renewal.
    auto fresh = make();
    auto p = fresh.begin_pop(t0, 0ms);
    EXPECT_EQ(fresh.plan_move(p, t0, false, 0ms).kind, move_kind::renew_then_move);
}

TEST(ConsumerLease, BlocksAreCappedByHalfTheLeaseAndHalfTheCommandTimeout) {
    auto l = make(timing(10000ms));
    auto p = l.begin_pop(t0, 60000ms);
    EXPECT_EQ(l.plan_move(p, t0, false, 0ms).block, 5000ms);          // no command timeout
    EXPECT_EQ(l.plan_move(p, t0, false, 3000ms).block, 1500ms);       // half the command timeout
    EXPECT_EQ(l.plan_move(p, t0, false, 1ms).block, 1ms);             // at least 1 ms
    EXPECT_EQ(l.plan_move(p, t0 + 59990ms, false, 0ms).block, 10ms);  // what is left
}

TEST(ConsumerLease, PopLoopEndsAtTheDeadlineOrOnStopButAlwaysTriesOnce) {
    auto l = started(t0);
    // A zero timeout tries once without blocking.
    auto p = l.begin_pop(t0, 0ms);
    auto m = l.plan_move(p, t0, true, 0ms);  // stop before the first try: it still tries
    EXPECT_NE(m.kind, move_kind::none);
    EXPECT_EQ(m.block, 0ms);
    EXPECT_EQ(l.plan_move(p, t0, false, 0ms).kind, move_kind::none);
    // A blocking pop repeats blocks until its deadline.
    auto q = l.begin_pop(t0, 300ms);
    EXPECT_EQ(l.plan_move(q, t0, false, 0ms).block, 300ms);
    EXPECT_EQ(l.plan_move(q, t0 + 299ms, false, 0ms).block, 1ms);
    EXPECT_EQ(l.plan_move(q, t0 + 299ms + 999us, false, 0ms).kind, move_kind::none);
    // ... and ends between blocks once stop is requested.
    auto r = l.begin_pop(t0, 300ms);
    (void)l.plan_move(r, t0, false, 0ms);
    EXPECT_EQ(l.plan_move(r, t0 + 1ms, true, 0ms).kind, move_kind::none);
}

TEST(ConsumerLease, C8_PopForeverSaturatesInsteadOfOverflowing) {
    auto l = started(t0);
    auto p = l.begin_pop(t0, milliseconds::max());
    EXPECT_GT(p.deadline, t0 + std::chrono::hours(24 * 365));
    const auto m = l.plan_move(p, t0, false, 200ms);
    EXPECT_EQ(m.block, 100ms);
    EXPECT_GT(m.reply_deadline, m.block);
}

TEST(ConsumerLease, ReplyDeadlineOfABlockingMove) {
    // The connection's own deadline when it covers the block with room to spare.
    EXPECT_EQ(blocking_deadline(100ms, 2000ms), 2000ms);
    EXPECT_EQ(blocking_deadline(1250ms, 2000ms), 2000ms);  // spare 1500 - 250
    EXPECT_EQ(blocking_deadline(1251ms, 2000ms), 3251ms);  // else block + default
    EXPECT_EQ(blocking_deadline(100ms, 300ms), 400ms);     // spare under 250 ms: always added
    EXPECT_EQ(blocking_deadline(100ms, 0ms), 0ms);         // no deadline stays none
    EXPECT_EQ(blocking_deadline(milliseconds::max() - 1ms, 10ms), 0ms);  // overflow: none
    EXPECT_EQ(seconds_arg(1250ms), "1.250");
    EXPECT_EQ(seconds_arg(0ms), "0.001");  // never "0" (block forever)
    EXPECT_EQ(seconds_arg(-5ms), "0.001");
}

TEST(ConsumerLease, PlainMoveAfterAStallRenewsAtOnce) {
    auto l = started(t0);  // lease until t0 + 1000, margin 250
    auto p = l.begin_pop(t0, 0ms);
    const auto m = l.plan_move(p, t0, false, 0ms);
    ASSERT_EQ(m.kind, move_kind::plain);
    EXPECT_FALSE(l.moved(p, m.kind, t0, t0 + 750ms, true, true));
    EXPECT_TRUE(
        l.moved(p, m.kind, t0, t0 + 751ms, true, true));  // the reply came within the margin
    EXPECT_FALSE(
        l.moved(p, m.kind, t0, t0 + 900ms, true, false));  // nothing moved: nothing to protect
}

TEST(ConsumerLease, Q5_RenewingMoveRecordsTheRenewalOrRegistersAfterTheMove) {
    auto l = make();
    const auto me = l.current().who;
    auto p = l.begin_pop(t0, 100ms);
    const auto m = l.plan_move(p, t0, false, 0ms);
    ASSERT_EQ(m.kind, move_kind::renew_then_move);
    EXPECT_FALSE(l.moved(p, m.kind, t0 + 1ms, t0 + 50ms, true, false));
    EXPECT_EQ(l.lease_until(me), t0 + 1001ms);
    // The transaction failed but its BLMOVE moved a message: register at once.
    EXPECT_TRUE(l.moved(p, m.kind, t0 + 60ms, t0 + 70ms, false, true));
    EXPECT_EQ(l.lease_until(me), t0 + 1001ms);
}

TEST(ConsumerLease, TransportErrorInAPopRetiresTheIdentityRefusalDoesNot) {
    auto l = started(t0);
    const auto first = l.current();
    auto p = l.begin_pop(t0, 0ms);
    EXPECT_EQ(l.outstanding(first.who), 1);  // counted before the move (Q3)
    l.end_pop(p, pop_end::refused);
    EXPECT_EQ(l.current().id, "c");
    EXPECT_EQ(l.outstanding(first.who), 0);
    auto q = l.begin_pop(t0, 0ms);
    l.end_pop(q, pop_end::transport_error);
    EXPECT_EQ(l.current().id, "c~1");
    // A second failure under the same (now retired) identity does not retire the new one.
    auto r = l.begin_pop(t0, 0ms);
    auto s = l.begin_pop(t0, 0ms);
    l.end_pop(r, pop_end::transport_error);
    EXPECT_EQ(l.current().id, "c~2");
    l.end_pop(s, pop_end::transport_error);
    EXPECT_EQ(l.current().id, "c~2");
}

TEST(ConsumerLease, RetiredIdentityIsRenewedWhileItsDeliveriesAreOutstandingThenForgotten) {
    auto l = started(t0);
    const auto old = l.current();
    auto p = l.begin_pop(t0, 0ms);
    l.end_pop(p, pop_end::delivered);
    ASSERT_TRUE(l.retire(old.who));
    EXPECT_FALSE(l.retire(old.who));
    const auto now_current = l.current();
    auto u = l.tick(t0 + 200ms);
    ASSERT_EQ(u.renew.size(), 2u);
    EXPECT_EQ(u.renew[0].id, now_current.id);
    EXPECT_EQ(u.renew[1].id, "c");
    l.renewed(old.who, t0 + 200ms);
    // The delivery is acked: the retired identity is no longer renewed ...
    auto s = l.begin_settle("c", t0 + 300ms);
    EXPECT_EQ(l.settle(s, settle_attempt::replied, t0 + 301ms).verdict, settle_verdict::done);
    u = l.tick(t0 + 400ms);
    ASSERT_EQ(u.renew.size(), 1u);
    EXPECT_EQ(u.renew[0].id, now_current.id);
    // ... and forgotten two leases after its bound.
    EXPECT_EQ(l.identities(), 2u);
    (void)l.tick(t0 + 1200ms + 2000ms);
    EXPECT_EQ(l.identities(), 2u);
    (void)l.tick(t0 + 1200ms + 2001ms);
    EXPECT_EQ(l.identities(), 1u);
}

TEST(ConsumerLease, UpkeepRenewsEveryHeartbeatIntervalAndRecoversEveryRecoverInterval) {
    auto l = make(timing(1000ms, 200ms, 500ms));
    EXPECT_FALSE(l.next_due());
    EXPECT_TRUE(l.tick(t0).renew.empty());  // not running
    l.started(t0);
    EXPECT_EQ(*l.next_due(), t0 + 200ms);
    EXPECT_TRUE(l.tick(t0 + 199ms).renew.empty());
    auto u = l.tick(t0 + 200ms);
    EXPECT_EQ(u.renew.size(), 1u);
    EXPECT_FALSE(u.recover);
    EXPECT_EQ(*l.next_due(), t0 + 400ms);
    (void)l.tick(t0 + 400ms);
    EXPECT_EQ(*l.next_due(), t0 + 500ms);
    u = l.tick(t0 + 500ms);
    EXPECT_TRUE(u.renew.empty());
    EXPECT_TRUE(u.recover);
    EXPECT_EQ(*l.next_due(), t0 + 600ms);
    // Recovery off: only heartbeats.
    auto n = make(timing(1000ms, 200ms, 0ms));
    n.started(t0);
    for (int i = 1; i <= 10; ++i) EXPECT_FALSE(n.tick(t0 + i * 200ms).recover);
    EXPECT_EQ(*n.next_due(), t0 + 2200ms);
}

TEST(ConsumerLease, CloseReturnsEveryIdentityAndForgetsTheirLeases) {
    auto l = started(t0);
    auto p = l.begin_pop(t0, 0ms);
    l.end_pop(p, pop_end::delivered);
    l.retire(l.current().who);
    const auto all = l.close();
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(all[0].id, "c");
    EXPECT_EQ(all[1].id, "c~1");
    EXPECT_FALSE(l.running());
    EXPECT_FALSE(l.next_due());
    EXPECT_EQ(l.identities(), 1u);
    EXPECT_EQ(l.current().id, "c~1");
    EXPECT_EQ(l.lease_until(l.current().who), time_point{});
}

TEST(ConsumerLease, Q1_RefusedSettleIsRetriedWithDoublingBackoffWhileTheLeaseHolds) {
    auto l = started(t0, timing(2000ms));  // lease until t0 + 2000 (margin 500), give-up after 2000
    const auto me = l.current().who;
    auto p = l.begin_pop(t0, 0ms);
    l.end_pop(p, pop_end::delivered);
    auto s = l.begin_settle("c", t0);
    ASSERT_EQ(s.owner, me);
    auto now = t0;
    std::vector<milliseconds> waits;
    for (;;) {
        const auto st = l.settle(s, settle_attempt::refused, now);
        if (st.verdict != settle_verdict::retry) {
            EXPECT_EQ(st.verdict, settle_verdict::give_up);
            break;
        }
        waits.push_back(st.wait);
        now += st.wait;
        EXPECT_LT(now + l.margin(), l.lease_until(me));  // each retry lands while the lease holds
    }
    // At t0 + 1130 the next attempt (500 ms later) would land within the margin of the lease's
    // end, although the give-up time (t0 + 2000) is not reached.
    EXPECT_EQ(waits, (std::vector<milliseconds>{10ms, 20ms, 40ms, 80ms, 160ms, 320ms, 500ms}));
    // Given up: the identity is retired, so recovery returns the message once its lease lapses.
    EXPECT_EQ(l.current().id, "c~1");
    EXPECT_EQ(l.outstanding(me), 0);
}

TEST(ConsumerLease, Q1_SettleRetriesStopAfterOneVisibilityTimeoutEvenWhileRenewed) {
    auto l = started(t0, timing(2000ms));
    const auto me = l.current().who;
    auto s = l.begin_settle("c", t0);
    auto now = t0;
    int retries = 0;
    for (;;) {
        l.renewed(me, now);  // the upkeep keeps renewing
        const auto st = l.settle(s, settle_attempt::refused, now);
        if (st.verdict != settle_verdict::retry) break;
        ++retries;
        now += st.wait;
    }
    // 10+20+40+80+160+320 = 630, then 500-ms steps to 1630: 2130 would pass the give-up
    // time (one visibility timeout), although the lease would hold.
    EXPECT_EQ(now, t0 + 1630ms);
    EXPECT_EQ(retries, 8);
    EXPECT_EQ(l.current().id, "c~1");
}

TEST(ConsumerLease, D1_LostSettleReplyIsOutcomeUnknownAndRetires) {
    auto l = started(t0);
    auto p = l.begin_pop(t0, 0ms);
    l.end_pop(p, pop_end::delivered);
    auto s = l.begin_settle("c", t0);
    EXPECT_EQ(l.settle(s, settle_attempt::reply_lost, t0).verdict, settle_verdict::outcome_unknown);
    EXPECT_EQ(l.current().id, "c~1");
    EXPECT_EQ(l.outstanding(p.who), 0);
}

TEST(ConsumerLease, SettleOfAForeignDeliveryIsNotRetried) {
    auto l = started(t0);
    auto s = l.begin_settle("someone-else", t0);
    EXPECT_FALSE(s.owner);
    EXPECT_EQ(l.settle(s, settle_attempt::refused, t0).verdict, settle_verdict::give_up);
    EXPECT_EQ(l.current().id, "c");  // our identity is not retired for it
}
