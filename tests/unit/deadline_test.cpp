// Saturating deadline arithmetic (review finding C8: now + milliseconds::max() overflowed).
#include <redcoord/core/deadline.hpp>

#include <gtest/gtest.h>

using namespace std::chrono;
using redcoord::deadline_after;
using redcoord::forever;

TEST(Deadline, MaxDurationsSaturateToForever) {
    const auto now = steady_clock::now();
    EXPECT_GE(deadline_after(milliseconds::max(), now), now + hours(24 * 365 * 9));
    EXPECT_GE(deadline_after(hours::max(), now), now + hours(24 * 365 * 9));
    EXPECT_GE(deadline_after(nanoseconds::max(), now), now + hours(24 * 365 * 9));
    EXPECT_GE(deadline_after(seconds::max()), now + hours(24 * 365 * 9));
}

TEST(Deadline, OrdinaryWaitsAreExact) {
    const auto now = steady_clock::now();
    EXPECT_EQ(deadline_after(milliseconds(250), now), now + milliseconds(250));
    EXPECT_EQ(deadline_after(microseconds(7), now), now + microseconds(7));
    EXPECT_EQ(deadline_after(hours(1), now), now + hours(1));
}

TEST(Deadline, NegativeAndZeroWaitsMeanNow) {
    const auto now = steady_clock::now();
    EXPECT_EQ(deadline_after(milliseconds(0), now), now);
    EXPECT_EQ(deadline_after(milliseconds(-5), now), now);
    EXPECT_EQ(deadline_after(milliseconds::min(), now), now);
}

TEST(Deadline, FromForeverStaysThere) {
    const auto f = forever();
    EXPECT_EQ(deadline_after(hours(1), f), f);
    EXPECT_LE(redcoord::time_left(f - hours(1)), f - steady_clock::now());
    EXPECT_EQ(redcoord::time_left(steady_clock::now() - seconds(1)), milliseconds(0));
}
