// detail::lease_schedule: the lease arithmetic the lock hold, the fair lock, the queue
// consumer, the job claim, the barrier member and the election term share.
#include <redcoord/core/detail/lease_schedule.hpp>

#include <gtest/gtest.h>

using namespace std::chrono_literals;
using redcoord::detail::lease_schedule;
using time_point = lease_schedule::time_point;

namespace {
const time_point t0 = time_point{} + std::chrono::hours(1000);
}  // namespace

TEST(LeaseSchedule, DriftIsTheRedlockAllowance) {
    EXPECT_EQ(lease_schedule(10s, 0.01).drift(), 102ms);
    EXPECT_EQ(lease_schedule(30ms, 0.01).drift(), 2300us);
    EXPECT_EQ(lease_schedule(10s, 0.0).drift(), 2ms);
    // The election's allowance is an option of its own, taken as given.
    EXPECT_EQ(lease_schedule(20s, 202ms).drift(), 202ms);
    EXPECT_EQ(lease_schedule(20s, 202ms).ttl(), 20s);
}

TEST(LeaseSchedule, TrustEndsTtlMinusDriftAfterTheRequestWasSent) {
    const lease_schedule s(1000ms, 0.01);  // drift 12 ms
    EXPECT_EQ(s.valid_until(t0), t0 + 988ms);
    // A later send moves it on by as much.
    EXPECT_EQ(s.valid_until(t0 + 10ms), t0 + 998ms);
    EXPECT_EQ(lease_schedule(100ms, 0ms).valid_until(t0), t0 + 100ms);
}

TEST(LeaseSchedule, ValidityLeftIsTtlMinusElapsedMinusDrift) {
    const lease_schedule s(10000ms, 0.01);
    EXPECT_EQ(s.validity_left(0us), 9898ms);
    EXPECT_EQ(s.validity_left(1500us), 9898ms - 1500us);
    EXPECT_LE(s.validity_left(9898ms).count(), 0);
    EXPECT_GT(lease_schedule(100ms, 0.01).validity_left(96ms).count(), 0);  // 100 - 96 - 3
    EXPECT_LE(lease_schedule(100ms, 0.01).validity_left(97ms).count(), 0);
    // The end of the trust and the validity agree.
    EXPECT_EQ(t0 + s.validity_left(2s), s.valid_until(t0) - 2s);
}

TEST(LeaseSchedule, RenewalsComeEveryThirdOfTheTtlAndAtLeastEveryMillisecond) {
    EXPECT_EQ(lease_schedule(30s, 0.01).renew_period(), 10s);
    EXPECT_EQ(lease_schedule(1000ms, 0.01).renew_period(), 333ms);
    EXPECT_EQ(lease_schedule(2ms, 0.0).renew_period(), 1ms);
    // After a failed renewal the next one is still due before the trust ends.
    const lease_schedule s(900ms, 0.01);
    EXPECT_LT(t0 + 2 * s.renew_period(), s.valid_until(t0));
}
