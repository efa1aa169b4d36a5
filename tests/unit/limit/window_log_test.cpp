// The sliding-window-log engine (limit/src/window_log.hpp) over seeded schedules: never more
// than `limit` units in any window, exact retry_after, and broken variants the check catches.

#include "window_log.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <optional>
#include <random>
#include <vector>

using namespace std::chrono_literals;
using redcoord::limit_result;
using redcoord::detail::window_decide;
using redcoord::detail::window_params;

namespace {

using engine = std::function<limit_result(const window_params&, std::deque<std::int64_t>&,
                                          std::int64_t, std::uint64_t)>;

// Admission times, one entry per admitted unit, in order.
std::vector<std::int64_t> run_schedule(const engine& e, const window_params& p, std::uint32_t seed,
                                       int requests) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int> kind(0, 9);
    std::uniform_int_distribution<std::int64_t> small(0,
                                                      std::max<std::int64_t>(1, p.window_us / 7));
    std::uniform_int_distribution<std::int64_t> large(0, p.window_us * 2);
    std::uniform_int_distribution<std::uint64_t> cost(1, p.limit);
    std::deque<std::int64_t> log;
    std::int64_t now = 1'700'000'000'000'000;
    std::vector<std::int64_t> out;
    for (int i = 0; i < requests; ++i) {
        const int k = kind(rng);
        now += k < 4 ? 0 : k < 9 ? small(rng) : large(rng);
        const auto c = kind(rng) < 7 ? 1 : cost(rng);
        if (e(p, log, now, c).allowed) out.insert(out.end(), c, now);
    }
    return out;
}

// The first i such that more than `limit` units fall in [at[i], at[i] + window), if any.
std::optional<std::size_t> crowded_window(const std::vector<std::int64_t>& at,
                                          const window_params& p) {
    std::size_t j = 0;
    for (std::size_t i = 0; i < at.size(); ++i) {
        j = std::max(j, i);
        while (j < at.size() && at[j] < at[i] + p.window_us) ++j;
        if (j - i > p.limit) return i;
    }
    return std::nullopt;
}

const window_params param_sets[] = {{10, 1'000'000}, {1, 1000}, {100, 60'000'000}, {3, 7}};

bool violates(const engine& e, std::uint32_t seeds) {
    for (const auto& p : param_sets)
        for (std::uint32_t seed = 1; seed <= seeds; ++seed)
            if (crowded_window(run_schedule(e, p, seed, 1000), p)) return true;
    return false;
}

}  // namespace

TEST(WindowLog, NeverMoreThanLimitInAnyWindow) {
    for (const auto& p : param_sets)
        for (std::uint32_t seed = 1; seed <= 40; ++seed) {
            const auto at = run_schedule(window_decide, p, seed, 1000);
            const auto bad = crowded_window(at, p);
            ASSERT_FALSE(bad) << "limit " << p.limit << " window " << p.window_us << " seed "
                              << seed << " from unit " << *bad;
            ASSERT_FALSE(at.empty());
        }
}

TEST(WindowLog, BrokenEngineWithAShortWindowIsCaught) {
    const engine short_window = [](const window_params& p, std::deque<std::int64_t>& log,
                                   std::int64_t now, std::uint64_t cost) {
        return window_decide({p.limit, std::max<std::int64_t>(1, p.window_us - 1)}, log, now, cost);
    };
    EXPECT_TRUE(violates(short_window, 10));
}

TEST(WindowLog, BrokenEngineWithOneUnitTooManyIsCaught) {
    const engine one_more = [](const window_params& p, std::deque<std::int64_t>& log,
                               std::int64_t now, std::uint64_t cost) {
        return window_decide({p.limit + 1, p.window_us}, log, now, cost);
    };
    EXPECT_TRUE(violates(one_more, 5));
}

TEST(WindowLog, RetryAfterIsExact) {
    const window_params p{3, 1'000'000};
    std::deque<std::int64_t> log;
    const std::int64_t t0 = 1'700'000'000'000'000;
    ASSERT_TRUE(window_decide(p, log, t0, 1).allowed);
    ASSERT_TRUE(window_decide(p, log, t0 + 100, 2).allowed);
    const auto refused = window_decide(p, log, t0 + 500, 2);
    ASSERT_FALSE(refused.allowed);
    EXPECT_EQ(refused.remaining, 0u);
    // Two units must leave: the first (t0) and the second (t0 + 100).
    EXPECT_EQ(refused.retry_after, 1'000'000us + 100us - 500us);
    EXPECT_EQ(refused.reset_after, 1'000'000us + 100us - 500us);
    const auto when = t0 + 500 + refused.retry_after.count();
    auto copy = log;
    EXPECT_FALSE(window_decide(p, copy, when - 1, 2).allowed);
    const auto ok = window_decide(p, log, when, 2);
    EXPECT_TRUE(ok.allowed);
    EXPECT_EQ(ok.remaining, 1u);  // all three earlier units have left by then
}

TEST(WindowLog, RefusalChangesNothingButExpiredUnits) {
    const window_params p{2, 1000};
    std::deque<std::int64_t> log;
    ASSERT_TRUE(window_decide(p, log, 10, 2).allowed);
    EXPECT_FALSE(window_decide(p, log, 20, 1).allowed);
    EXPECT_EQ(log.size(), 2u);
    EXPECT_TRUE(window_decide(p, log, 1010, 2).allowed);
    EXPECT_EQ(log.size(), 2u);
}
