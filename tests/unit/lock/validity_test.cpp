// Pure arithmetic of the Redlock page (redis.io, "Distributed Locks with Redis"): drift, validity, majority and decisions
// (lock/src/lock_engine.hpp).
#include "lock_engine.hpp"

#include <gtest/gtest.h>

using namespace std::chrono_literals;
using namespace redcoord::detail;
using redcoord::lock_acquisition;

TEST(LockValidity, DriftIsOnePercentPlusTwoMilliseconds) {
    EXPECT_EQ(clock_drift(10000ms, 0.01), 102ms);  // 10 s TTL: 100 ms + 2 ms
    EXPECT_EQ(clock_drift(300ms, 0.01), 5ms);
    EXPECT_EQ(clock_drift(1000ms, 0.0), 2ms);
    EXPECT_EQ(clock_drift(333ms, 0.01), 5330us);  // rounded up to whole microseconds
}

TEST(LockValidity, ValidityIsTtlMinusElapsedMinusDrift) {
    EXPECT_EQ(validity(10000ms, 0us, 0.01), 9898ms);
    EXPECT_EQ(validity(10000ms, 1500us, 0.01), 9898ms - 1500us);
    EXPECT_LE(validity(10000ms, 9898ms, 0.01).count(), 0);
    EXPECT_LT(validity(100ms, 200ms, 0.01).count(), 0);
    EXPECT_GT(validity(100ms, 96ms, 0.01).count(), 0);  // 100 - 96 - 3 = 1 ms
    EXPECT_LE(validity(100ms, 97ms, 0.01).count(), 0);  // 100 - 97 - 3 = 0
}

TEST(LockValidity, RemainingCountsDownAndStopsAtZero) {
    lock_acquisition a;
    a.valid_until = std::chrono::steady_clock::now() + 5s;
    EXPECT_GT(a.remaining(), 4s);
    EXPECT_LE(a.remaining(), 5s);
    a.valid_until = std::chrono::steady_clock::now() - 1s;
    EXPECT_EQ(a.remaining(), 0ms);
}

TEST(LockQuorum, MajorityOfN) {
    EXPECT_EQ(quorum(1), 1u);
    EXPECT_EQ(quorum(2), 2u);
    EXPECT_EQ(quorum(3), 2u);
    EXPECT_EQ(quorum(4), 3u);
    EXPECT_EQ(quorum(5), 3u);
    EXPECT_EQ(quorum(7), 4u);
}

TEST(LockQuorum, DecidesAsSoonAsEitherWayIsCertain) {
    // Five nodes: three yes win; three no lose; two answers are never enough.
    EXPECT_EQ(decide(5, 3, 0, 0), quorum_state::reached);
    EXPECT_EQ(decide(5, 3, 2, 0), quorum_state::reached);
    EXPECT_EQ(decide(5, 2, 0, 0), quorum_state::undecided);
    EXPECT_EQ(decide(5, 2, 2, 0), quorum_state::undecided);
    EXPECT_EQ(decide(5, 0, 3, 0), quorum_state::refused);
    EXPECT_EQ(decide(5, 2, 2, 1), quorum_state::refused);
    EXPECT_EQ(decide(5, 1, 1, 2), quorum_state::refused);  // at most 2 yes possible
    EXPECT_EQ(decide(5, 1, 0, 2), quorum_state::undecided);
    // Failures beyond N - quorum make a majority impossible for lack of nodes.
    EXPECT_EQ(decide(5, 0, 0, 3), quorum_state::unreachable);
    EXPECT_EQ(decide(5, 2, 0, 3), quorum_state::unreachable);
    EXPECT_EQ(decide(5, 3, 0, 2), quorum_state::reached);  // a minority down still acquires
    EXPECT_EQ(decide(1, 1, 0, 0), quorum_state::reached);
    EXPECT_EQ(decide(1, 0, 0, 1), quorum_state::unreachable);
    EXPECT_EQ(decide(1, 0, 1, 0), quorum_state::refused);
}
