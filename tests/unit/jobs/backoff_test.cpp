// backoff_policy: the retry delays of jobs, fixed or exponential with jitter.

#include <redcoord/core/errors.hpp>
#include <redcoord/jobs/backoff.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

using namespace std::chrono_literals;
using redcoord::backoff_policy;

TEST(Backoff, FixedIsTheSameEveryTime) {
    const auto p = backoff_policy::fixed(250ms);
    for (unsigned n : {0U, 1U, 2U, 50U}) EXPECT_EQ(p.delay(n, 0.5), 250ms) << n;
}

TEST(Backoff, ExponentialDoublesUpToTheCapWithoutOverflow) {
    const auto p = backoff_policy::exponential(100ms, 1500ms);
    EXPECT_EQ(p.delay(0, 0), 100ms);
    EXPECT_EQ(p.delay(1, 0), 100ms);
    EXPECT_EQ(p.delay(2, 0), 200ms);
    EXPECT_EQ(p.delay(3, 0), 400ms);
    EXPECT_EQ(p.delay(4, 0), 800ms);
    EXPECT_EQ(p.delay(5, 0), 1500ms);
    EXPECT_EQ(p.delay(std::numeric_limits<unsigned>::max(), 0), 1500ms);
    const auto huge = backoff_policy::exponential(1ms, std::chrono::milliseconds::max());
    EXPECT_EQ(huge.delay(200, 0), std::chrono::milliseconds::max());
    EXPECT_EQ(backoff_policy::exponential(0ms, 1s).delay(10, 0), 0ms);
}

TEST(Backoff, JitterDrawsWithinItsFractionOfTheDelay) {
    const auto p = backoff_policy::exponential(1000ms, 60s, 0.5);
    EXPECT_EQ(p.delay(1, 0.0), 1000ms);
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (unsigned n = 1; n < 10; ++n) {
        const auto full = backoff_policy::exponential(1000ms, 60s).delay(n, 0);
        for (int i = 0; i < 200; ++i) {
            const auto d = p.delay(n, u(rng));
            EXPECT_LE(d, full);
            EXPECT_GE(d.count(), full.count() / 2);
        }
    }
    // Full jitter reaches down to (almost) zero.
    EXPECT_LE(backoff_policy::exponential(1000ms, 60s, 1.0).delay(1, 0.999), 1ms);
}

TEST(Backoff, InvalidPoliciesAreTypedErrors) {
    EXPECT_NO_THROW(backoff_policy{}.validate());
    EXPECT_THROW(backoff_policy::fixed(-1ms).validate(), redcoord::invalid_argument);
    EXPECT_THROW(backoff_policy::exponential(2s, 1s).validate(), redcoord::invalid_argument);
    EXPECT_THROW(backoff_policy::exponential(1s, 2s, -0.1).validate(), redcoord::invalid_argument);
    EXPECT_THROW(backoff_policy::exponential(1s, 2s, 1.5).validate(), redcoord::invalid_argument);
    EXPECT_THROW(backoff_policy::exponential(1s, 2s, std::nan("")).validate(),
                 redcoord::invalid_argument);
}
