// How long a refused limiter waiter sleeps (lease.hpp's refused_sleep): until the awaited
// lease's end plus up to timing.retry_jitter, else max_retry; capped by max_retry while no
// release notice can arrive or when the policy refreshes.

#include "lease.hpp"

#include <gtest/gtest.h>

#include <set>

using namespace std::chrono_literals;
using redcoord::detail::refused_sleep;
using redcoord::detail::wait_policy;

namespace wait_sleep_test {

TEST(RefusedSleep, WithoutJitterItEndsJustAfterTheAwaitedLease) {
    const wait_policy p{.max_retry = 500ms};
    EXPECT_EQ(refused_sleep(p, 100ms, true), 101ms);
    EXPECT_EQ(refused_sleep(p, 0ms, true), 500ms);  // no lease end known
}

TEST(RefusedSleep, TheJitterSpreadsTheWaitersOfOneLeaseWithinItsBound) {
    const wait_policy p{.max_retry = 500ms, .retry_jitter = 10ms};
    std::set<std::chrono::milliseconds::rep> seen;
    for (int i = 0; i < 500; ++i) {
        const auto s = refused_sleep(p, 100ms, true);
        EXPECT_GE(s, 101ms);
        EXPECT_LE(s, 111ms);
        seen.insert(s.count());
    }
    EXPECT_GE(seen.size(), 5u) << "the waiters of one lease would still ask together";
    EXPECT_EQ(refused_sleep(p, 0ms, true), 500ms);  // the jitter is for lease ends only
}

TEST(RefusedSleep, MaxRetryCapsTheSleepWithoutALinkOrWhenRefreshing) {
    const wait_policy p{.max_retry = 50ms, .retry_jitter = 10ms};
    EXPECT_EQ(refused_sleep(p, 1000ms, false), 50ms);
    const wait_policy refreshing{.max_retry = 50ms, .refresh = true};
    EXPECT_EQ(refused_sleep(refreshing, 1000ms, true), 50ms);
    EXPECT_EQ(refused_sleep(refreshing, 20ms, true), 21ms);
}

}  // namespace wait_sleep_test
