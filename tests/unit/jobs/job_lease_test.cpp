// The local bound of a job's lease (jobs/src/job_lease.hpp), on a fake clock.

#include "job_lease.hpp"

#include <gtest/gtest.h>

using namespace std::chrono_literals;
using redcoord::detail::job_lease;
using time_point = job_lease::time_point;

namespace {
const time_point t0{std::chrono::seconds(1000)};
}  // namespace

TEST(JobLease, TheMarginIsTheLocksDriftAllowance) {
    EXPECT_EQ(job_lease::margin(10s, 0.01), 102ms);
    EXPECT_EQ(job_lease::margin(30ms, 0.01), 2300us);
    EXPECT_EQ(job_lease::margin(10s, 0.0), 2ms);
}

TEST(JobLease, TheBoundIsTheClaimsSendTimePlusTheLeaseLessTheMargin) {
    job_lease l(3s, t0);
    EXPECT_EQ(l.until(), t0 + 3s - 32ms);
    EXPECT_FALSE(l.gone(t0 + 3s - 33ms));
    EXPECT_TRUE(l.gone(t0 + 3s - 32ms));
}

TEST(JobLease, AConfirmedRenewalMovesTheBoundToItsSendTime) {
    job_lease l(3s, t0);
    // Sent at 1 s, confirmed at 2.5 s: counted from when it was sent, not answered.
    l.renewed(t0 + 1s, t0 + 2500ms);
    EXPECT_EQ(l.until(), t0 + 4s - 32ms);
    EXPECT_FALSE(l.gone(t0 + 3500ms));
    EXPECT_TRUE(l.gone(t0 + 4s));
}

TEST(JobLease, ALateConfirmationOfAnOlderRenewalNeverMovesTheBoundBack) {
    job_lease l(3s, t0);
    l.renewed(t0 + 2s, t0 + 2100ms);
    l.renewed(t0 + 1s, t0 + 2200ms);  // a slower, earlier heartbeat answered after it
    EXPECT_EQ(l.until(), t0 + 5s - 32ms);
}

TEST(JobLease, FailedOrUnansweredHeartbeatsLeaveTheBoundWhereTheLastConfirmedOneSetIt) {
    job_lease l(3s, t0);
    l.renewed(t0 + 1s, t0 + 1010ms);
    // Heartbeats at 2 s, 3 s, ... fail or hang: nothing is confirmed, the bound stays.
    EXPECT_FALSE(l.gone(t0 + 3900ms));
    EXPECT_TRUE(l.gone(t0 + 4s - 32ms));
}

TEST(JobLease, AGoneLeaseStaysGoneEvenWhenARenewalIsConfirmedLater) {
    job_lease l(3s, t0);
    // Sent before the bound, answered after it: the stop token has fired meanwhile.
    l.renewed(t0 + 2900ms, t0 + 3100ms);
    EXPECT_TRUE(l.gone());
    EXPECT_TRUE(l.gone(t0 + 3100ms));
    EXPECT_EQ(l.until(), t0 + 3s - 32ms);
    // And once gone, never back, whatever the time asked about.
    EXPECT_TRUE(l.gone(t0));
    l.renewed(t0 + 3s, t0 + 3s);
    EXPECT_TRUE(l.gone(t0));
}
