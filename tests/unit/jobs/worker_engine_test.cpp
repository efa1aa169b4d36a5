// job_worker's engine (jobs/src/worker_engine.hpp), one decision at a time, on a fake clock.
#include "worker_engine.hpp"

#include <gtest/gtest.h>

using namespace std::chrono_literals;
using namespace redcoord::detail;
using time_point = worker_clock::time_point;

namespace {

const time_point t0 = time_point{} + std::chrono::hours(1);

worker_settings settings(std::size_t prefetch = 1) {
    worker_settings s;
    s.lease = 300ms;
    s.poll_timeout = 1000ms;
    s.timeout_margin = 20ms;
    s.settle_delay = 5ms;
    s.prefetch = prefetch;
    return s;
}

claimed_job_reply job(std::string id, std::chrono::milliseconds timeout = 0ms) {
    claimed_job_reply c;
    c.id = std::move(id);
    c.timeout = timeout;
    return c;
}

}  // namespace

TEST(WorkerEngine, ClaimsOneUntilItKnowsTheHandlersTimeThenFillsTheSettleWindow) {
    const worker_engine one(settings(1), t0);
    EXPECT_EQ(one.claim_size(1.0), 1u);
    const worker_engine many(settings(50), t0);
    EXPECT_EQ(many.claim_size(-1), 1u);         // no run yet
    EXPECT_EQ(many.claim_size(1000.0), 5u);     // 5 ms / 1 ms
    EXPECT_EQ(many.claim_size(0.01), 50u);      // capped at prefetch
    EXPECT_EQ(many.claim_size(100'000.0), 1u);  // long jobs: one at a time
}

TEST(WorkerEngine, TheDefaultPrefetchBatchesWithSeveralThreadsOnly) {
    EXPECT_EQ(prefetch_for(1, 0), 1u);
    EXPECT_EQ(prefetch_for(2, 0), batched_prefetch);
    EXPECT_EQ(prefetch_for(8, 0), batched_prefetch);
    EXPECT_GT(batched_prefetch, 1u);
    // An explicit value is kept, one thread or many.
    EXPECT_EQ(prefetch_for(1, 4), 4u);
    EXPECT_EQ(prefetch_for(4, 1), 1u);
}

TEST(WorkerEngine, SettlingClaimsDoTheHousekeepingAtMostEveryInterval) {
    worker_engine e(settings(), t0);
    EXPECT_TRUE(e.housekeeping_due(t0));
    EXPECT_FALSE(e.housekeeping_due(t0 + 5ms));
    EXPECT_TRUE(e.housekeeping_due(t0 + 10ms));
    e.housekeeping_done(t0 + 15ms);  // a plain claim
    EXPECT_FALSE(e.housekeeping_due(t0 + 20ms));
}

TEST(WorkerEngine, IdlesUntilTheNextDueJobAtMostPollTimeout) {
    const worker_engine e(settings(), t0);
    EXPECT_EQ(e.idle_wait(-1), 1000ms);
    EXPECT_EQ(e.idle_wait(40), 40ms);
    EXPECT_EQ(e.idle_wait(5000), 1000ms);
}

TEST(WorkerEngine, ASettlementWaitsForTheNextClaimOrSettleDelay) {
    worker_engine e(settings(10), t0);
    EXPECT_FALSE(e.settlement_queued(t0, false));  // the next claim carries it now
    EXPECT_FALSE(e.flush_at());
    EXPECT_TRUE(e.settlement_queued(t0 + 1ms, true));
    EXPECT_FALSE(e.settlement_queued(t0 + 2ms, true));  // already armed
    EXPECT_EQ(e.flush_at(), t0 + 6ms);
    EXPECT_EQ(e.upkeep_due(), t0 + 6ms);
    e.flushed();
    EXPECT_FALSE(e.flush_at());
    EXPECT_EQ(e.upkeep_due(), t0 + 100ms);  // the next heartbeat
}

TEST(WorkerEngine, HeartbeatsEveryThirdOfTheLeaseRenewingFromTheirSendTime) {
    worker_engine e(settings(), t0);
    EXPECT_FALSE(e.on_claimed({job("a"), job("b")}, "k", t0));  // the watch runs sooner
    EXPECT_FALSE(e.beat(t0 + 50ms));
    const auto b = e.beat(t0 + 100ms);
    ASSERT_TRUE(b);
    ASSERT_EQ(b->jobs.size(), 2u);
    EXPECT_EQ(e.upkeep_due(), t0 + 200ms);
    const auto before = *e.held_until("a", "k");
    // Answered late: the bound moves to the send time's, not the reply's.
    const auto stops =
        e.on_beat_reply(*b, {beat_status::held, beat_status::lost}, t0 + 100ms, t0 + 250ms);
    EXPECT_EQ(*e.held_until("a", "k"), before + 100ms);
    ASSERT_EQ(stops.size(), 1u);
    EXPECT_EQ(stops[0].id, "b");
    EXPECT_EQ(stops[0].why, stop_reason::lost);
    EXPECT_TRUE(e.stop_requested("b", "k"));
    EXPECT_FALSE(e.stop_requested("a", "k"));
}

TEST(WorkerEngine, ALapsedLeaseStopsItsJobAndIsNeverRenewed) {
    worker_engine e(settings(), t0);
    (void)e.on_claimed({job("a")}, "k", t0);
    const auto bound = *e.held_until("a", "k");
    EXPECT_LT(bound, t0 + 300ms);  // the drift margin
    auto w = e.watch(bound - 1ms);
    EXPECT_TRUE(w.stopped.empty());
    EXPECT_EQ(w.next, bound);
    w = e.watch(bound);
    ASSERT_EQ(w.stopped.size(), 1u);
    EXPECT_EQ(w.stopped[0].why, stop_reason::lease_lapsed);
    EXPECT_FALSE(e.held_until("a", "k"));
    // The next heartbeat leaves it out; a late confirmation does not revive it.
    const auto b = e.beat(bound + 1ms);
    ASSERT_TRUE(b);
    EXPECT_TRUE(b->jobs.empty());
    (void)e.on_beat_reply({{{"a", "k"}}}, {beat_status::held}, bound - 10ms, bound + 2ms);
    EXPECT_FALSE(e.held_until("a", "k"));
    EXPECT_TRUE(e.watch(bound + 3ms).stopped.empty());  // decided once
}

TEST(WorkerEngine, ATimeoutStopsItsJobItsMarginEarlyAndArmsTheWatch) {
    worker_engine e(settings(), t0);
    const auto rearm = e.on_claimed({job("a", 50ms)}, "k", t0);
    ASSERT_TRUE(rearm);
    EXPECT_EQ(*rearm, t0 + 30ms);
    EXPECT_EQ(e.deadline("a", "k"), t0 + 50ms);
    const auto w = e.watch(t0 + 30ms);
    ASSERT_EQ(w.stopped.size(), 1u);
    EXPECT_EQ(w.stopped[0].why, stop_reason::timed_out);
}

TEST(WorkerEngine, CancelAndCancelledHeartbeatsStopTheJob) {
    worker_engine e(settings(), t0);
    (void)e.on_claimed({job("a"), job("b")}, "k", t0);
    EXPECT_TRUE(e.cancel("a"));
    EXPECT_FALSE(e.cancel("z"));
    EXPECT_TRUE(e.stop_token("a", "k").stop_requested());
    const auto stops = e.on_beat_reply({{{"b", "k"}}}, {beat_status::cancelled}, t0, t0 + 1ms);
    ASSERT_EQ(stops.size(), 1u);
    EXPECT_EQ(stops[0].why, stop_reason::cancelled);
}

TEST(WorkerEngine, ForgetAndAnswersOnlyConcernTheirClaimToken) {
    worker_engine e(settings(), t0);
    (void)e.on_claimed({job("a")}, "old", t0);
    (void)e.on_claimed({job("a")}, "new", t0 + 10ms);  // claimed again (reclaimed, then ours)
    EXPECT_FALSE(e.holds("a", "old"));
    e.forget("a", "old");
    EXPECT_TRUE(e.holds("a", "new"));
    EXPECT_TRUE(e.on_beat_reply({{{"a", "old"}}}, {beat_status::lost}, t0, t0).empty());
    EXPECT_FALSE(e.stop_requested("a", "new"));
    e.forget("a", "new");
    EXPECT_EQ(e.held_count(), 0u);
    EXPECT_FALSE(e.stop_token("a", "new").stop_possible());
}
