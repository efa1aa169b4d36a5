// Bad input to the limiters is refused with invalid_argument before anything is sent: the
// pool points at a port nobody listens on, so a command sent would fail differently.

#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/limit/rate_limiter.hpp>
#include <redcoord/limit/rw_lock.hpp>
#include <redcoord/limit/semaphore.hpp>
#include <redcoord/limit/sliding_window_limiter.hpp>

#include <gtest/gtest.h>

#include <limits>

using namespace std::chrono_literals;
using namespace redcoord;

namespace {
connection_pool& nowhere() {
    // Port 1 on loopback: nothing listens there, so any command would be a connection_error.
    static connection_pool pool(parse_endpoint("redis://127.0.0.1:1"));
    return pool;
}
}  // namespace

TEST(LimitOptions, RateLimiterRefusesBadRates) {
    auto make = [](rate_limiter_options o) { rate_limiter l(nowhere(), "api", std::move(o)); };
    EXPECT_THROW(make({.rate = 0}), invalid_argument);
    EXPECT_THROW(make({.rate = -5}), invalid_argument);
    EXPECT_THROW(make({.rate = std::numeric_limits<double>::infinity()}), invalid_argument);
    EXPECT_THROW(make({.rate = std::numeric_limits<double>::quiet_NaN()}), invalid_argument);
    EXPECT_THROW(make({.rate = 10, .period = 0s}), invalid_argument);
    EXPECT_THROW(make({.rate = 10, .period = -1s}), invalid_argument);
    EXPECT_THROW(make({.rate = 10, .burst = 0}), invalid_argument);
    EXPECT_THROW(make({.rate = 1e10}), invalid_argument);               // an interval below 1 ns
    EXPECT_THROW(make({.rate = 1e-9, .burst = 10}), invalid_argument);  // centuries of burst
    EXPECT_NO_THROW(make({.rate = 100, .burst = 20}));
    EXPECT_NO_THROW(make({.rate = 0.5}));
}

TEST(LimitOptions, NamesMustBeUsableHashTags) {
    const rate_limiter_options o{.rate = 1};
    EXPECT_THROW(rate_limiter(nowhere(), "", o), invalid_argument);
    EXPECT_THROW(rate_limiter(nowhere(), "a}b", o), invalid_argument);
    EXPECT_THROW(rate_limiter(nowhere(), "}a", o), invalid_argument);
    EXPECT_THROW(rate_limiter(nowhere(), "a\nb", o), invalid_argument);
    const sliding_window_options w{.limit = 1};
    EXPECT_THROW(sliding_window_limiter(nowhere(), "", w), invalid_argument);
    EXPECT_THROW(sliding_window_limiter(nowhere(), "x}", w), invalid_argument);
    EXPECT_NO_THROW(sliding_window_limiter(nowhere(), "a{b", w));
}

TEST(LimitOptions, CostAboveTheBurstIsRefusedBeforeSending) {
    rate_limiter l(nowhere(), "api", {.rate = 10, .burst = 5});
    EXPECT_THROW((void)l.try_acquire(0), invalid_argument);
    EXPECT_THROW((void)l.try_acquire(6), invalid_argument);
    EXPECT_THROW((void)l.acquire(6, 1s), invalid_argument);
    // A valid cost is sent, and fails for the missing server: proof the checks came first.
    EXPECT_THROW((void)l.try_acquire(5), connection_error);
}

TEST(LimitOptions, SlidingWindowRefusesBadLimitsAndCosts) {
    auto make = [](sliding_window_options o) {
        sliding_window_limiter l(nowhere(), "api", std::move(o));
    };
    EXPECT_THROW(make({.limit = 0}), invalid_argument);
    EXPECT_THROW(make({.limit = 2'000'000}), invalid_argument);
    EXPECT_THROW(make({.limit = 5, .window = 0s}), invalid_argument);
    EXPECT_THROW(make({.limit = 5, .window = std::chrono::hours(24 * 365)}), invalid_argument);
    sliding_window_limiter l(nowhere(), "api", {.limit = 5});
    EXPECT_THROW((void)l.try_acquire(0), invalid_argument);
    EXPECT_THROW((void)l.try_acquire(6), invalid_argument);
    EXPECT_THROW((void)l.try_acquire(5), connection_error);
}

TEST(LimitOptions, SemaphoreRefusesZeroPermitsBadCountsAndNamesBeforeSending) {
    auto make = [](const std::string& name, semaphore_options o) {
        semaphore sem(nowhere(), name, std::move(o));
    };
    EXPECT_THROW(make("s", {.permits = 0}), invalid_argument);
    EXPECT_THROW(make("s", {.timing = {.ttl = 0ms}}), invalid_argument);
    EXPECT_THROW(make("s", {.timing = {.ttl = -1s}}), invalid_argument);
    EXPECT_THROW(make("s", {.timing = {.max_retry_interval = 0ms}}), invalid_argument);
    EXPECT_THROW(make("s", {.timing = {.drift_factor = 0.5}}), invalid_argument);
    EXPECT_THROW(make("s", {.timing = {.wake_jitter = -1ms}}), invalid_argument);
    EXPECT_THROW(make("", {}), invalid_argument);
    EXPECT_THROW(make("a}b", {}), invalid_argument);
    EXPECT_THROW(make("}", {}), invalid_argument);
    semaphore sem(nowhere(), "s", {.permits = 3});
    EXPECT_THROW((void)sem.try_acquire(0), invalid_argument);
    EXPECT_THROW((void)sem.try_acquire(4), invalid_argument);
    EXPECT_THROW((void)sem.try_acquire_for(4, 1s), invalid_argument);
    // A valid count is sent, and fails for the missing server: proof the checks came first.
    EXPECT_THROW((void)sem.try_acquire(3), connection_error);
}

TEST(LimitOptions, RwLockRefusesBadTtlsAndNamesBeforeSending) {
    EXPECT_THROW(rw_lock(nowhere(), "a}b"), invalid_argument);
    EXPECT_THROW(rw_lock(nowhere(), ""), invalid_argument);
    EXPECT_THROW(rw_lock(nowhere(), "x", {.timing = {.ttl = 0ms}}), invalid_argument);
    EXPECT_THROW(rw_lock(nowhere(), "x", {.timing = {.ttl = 9ms}}), invalid_argument);
    EXPECT_THROW(rw_lock(nowhere(), "x", {.timing = {.drift_factor = -0.1}}), invalid_argument);
    rw_lock rw(nowhere(), "x");
    EXPECT_THROW((void)rw.try_lock(), connection_error);
}

TEST(LimitOptions, ParseRateReadsCountPerPeriod) {
    EXPECT_EQ(parse_rate("100/s").rate, 100);
    EXPECT_EQ(parse_rate("100/s").period, 1s);
    EXPECT_EQ(parse_rate("5/m").period, 60s);
    EXPECT_EQ(parse_rate("0.5/s").rate, 0.5);
    EXPECT_EQ(parse_rate("3/1h").period, 1h);
    EXPECT_EQ(parse_rate("1000/1m30s").period, 90s);
    EXPECT_EQ(parse_rate("20/500ms").period, 500ms);
    for (const char* bad :
         {"", "100", "/s", "100/", "0/s", "-1/s", "x/s", "10/parsec", "10/0s", "1e999/s", "10 /s"})
        EXPECT_THROW((void)parse_rate(bad), invalid_argument) << bad;
}
