// The GCRA engine (limit/src/gcra.hpp) over seeded schedules: it never admits more than
// burst + rate * t in any span t, it is tight (a client that retries after retry_after gets
// the rate), and its retry_after is exact. Broken variants show the invariant check bites.

#include "gcra.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <optional>
#include <random>
#include <vector>

using namespace std::chrono_literals;
using redcoord::detail::gcra_decide;
using redcoord::detail::gcra_params;
using redcoord::detail::gcra_step;
using redcoord::detail::gcra_tat;

namespace {

using engine = std::function<gcra_step(const gcra_params&, const std::optional<gcra_tat>&,
                                       std::int64_t, std::uint64_t)>;

struct admitted {
    std::int64_t at;
    std::uint64_t cost;
};

// Random arrivals (clustered, so bursts and long idles both happen) with random costs.
std::vector<admitted> run_schedule(const engine& e, const gcra_params& p, std::uint32_t seed,
                                   int requests) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int> kind(0, 9);
    const auto iv = static_cast<std::int64_t>(std::ceil(p.interval_us));
    std::uniform_int_distribution<std::int64_t> small(0, std::max<std::int64_t>(1, iv / 3));
    std::uniform_int_distribution<std::int64_t> large(0,
                                                      iv * static_cast<std::int64_t>(p.burst) * 3);
    std::uniform_int_distribution<std::uint64_t> cost(1, static_cast<std::uint64_t>(p.burst));
    std::optional<gcra_tat> tat;
    std::int64_t now = 1'700'000'000'000'000;  // server time in us, as TIME gives it
    std::vector<admitted> out;
    for (int i = 0; i < requests; ++i) {
        const int k = kind(rng);
        now += k < 6 ? 0 : k < 9 ? small(rng) : large(rng);
        const auto c = kind(rng) < 7 ? 1 : cost(rng);
        const auto s = e(p, tat, now, c);
        tat = s.tat;
        if (s.result.allowed) out.push_back({now, c});
    }
    return out;
}

// The first span [a, b] of admissions whose units exceed burst + (b - a) / interval, if any.
std::optional<std::pair<std::size_t, std::size_t>> exceeding_span(const std::vector<admitted>& a,
                                                                  const gcra_params& p) {
    for (std::size_t i = 0; i < a.size(); ++i) {
        double units = 0;
        for (std::size_t j = i; j < a.size(); ++j) {
            units += static_cast<double>(a[j].cost);
            const double bound = p.burst + static_cast<double>(a[j].at - a[i].at) / p.interval_us;
            if (units > bound + 1e-6) return std::make_pair(i, j);
        }
    }
    return std::nullopt;
}

const gcra_params param_sets[] = {
    {10'000, 20},               // 100/s, burst 20
    {1'000'000, 1},             // 1/s, no burst
    {333'333.3333333333, 5},    // 3/s: an interval that is no whole number of microseconds
    {142.857142857142857, 50},  // 7000/s
    {2'000'000, 3},             // 0.5/s
};

bool violates(const engine& e, std::uint32_t seeds) {
    for (const auto& p : param_sets)
        for (std::uint32_t seed = 1; seed <= seeds; ++seed)
            if (exceeding_span(run_schedule(e, p, seed, 600), p)) return true;
    return false;
}

}  // namespace

TEST(Gcra, NeverAdmitsMoreThanBurstPlusRateTimesSpan) {
    for (const auto& p : param_sets)
        for (std::uint32_t seed = 1; seed <= 40; ++seed) {
            const auto a = run_schedule(gcra_decide, p, seed, 600);
            const auto bad = exceeding_span(a, p);
            ASSERT_FALSE(bad) << "interval " << p.interval_us << " burst " << p.burst << " seed "
                              << seed << ": admissions " << bad->first << ".." << bad->second;
            ASSERT_FALSE(a.empty());
        }
}

TEST(Gcra, BrokenEngineWithOneUnitTooManyIsCaught) {
    const engine off_by_one = [](const gcra_params& p, const std::optional<gcra_tat>& tat,
                                 std::int64_t now, std::uint64_t cost) {
        return gcra_decide({p.interval_us, p.burst + 1}, tat, now, cost);
    };
    EXPECT_TRUE(violates(off_by_one, 5));
}

TEST(Gcra, BrokenEngineThatBanksIdleTimeIsCaught) {
    // Without max(TAT, now), a limiter idle for a long time banks credit for all of it and
    // then admits far more than the burst at once.
    const engine banks_idle = [](const gcra_params& p, const std::optional<gcra_tat>& tat,
                                 std::int64_t now, std::uint64_t cost) {
        // The lead may go negative: credit for the idle time.
        const double lead = tat ? static_cast<double>(tat->whole_us - now) + tat->fraction : 0;
        const double new_lead = lead + static_cast<double>(cost) * p.interval_us;
        gcra_step s;
        s.result.allowed = new_lead <= p.burst * p.interval_us;
        const double whole = std::floor(new_lead);
        s.tat = s.result.allowed ? std::optional<gcra_tat>(gcra_tat{
                                       now + static_cast<std::int64_t>(whole), new_lead - whole})
                                 : tat;
        return s;
    };
    EXPECT_TRUE(violates(banks_idle, 5));
}

TEST(Gcra, IdleLimiterAdmitsExactlyTheBurstAtOnce) {
    const gcra_params p{10'000, 20};
    std::optional<gcra_tat> tat;
    const std::int64_t now = 1'000'000'000'000'000;
    for (int i = 0; i < 20; ++i) {
        const auto s = gcra_decide(p, tat, now, 1);
        ASSERT_TRUE(s.result.allowed) << i;
        EXPECT_EQ(s.result.remaining, static_cast<std::uint64_t>(19 - i));
        tat = s.tat;
    }
    const auto refused = gcra_decide(p, tat, now, 1);
    EXPECT_FALSE(refused.result.allowed);
    EXPECT_EQ(refused.result.retry_after, 10'000us);
    EXPECT_EQ(refused.result.reset_after, 200'000us);
    EXPECT_EQ(refused.tat, tat);  // a refusal changes nothing
}

TEST(Gcra, RetryAfterIsExact) {
    const gcra_params p{10'000, 4};
    std::optional<gcra_tat> tat;
    const std::int64_t now = 1'000'000'000'000'000;
    tat = gcra_decide(p, tat, now, 4).tat;
    const auto refused = gcra_decide(p, tat, now + 1'234, 3);
    ASSERT_FALSE(refused.result.allowed);
    EXPECT_EQ(refused.result.retry_after, 30'000us - 1'234us);
    const auto when = now + 1'234 + refused.result.retry_after.count();
    EXPECT_FALSE(gcra_decide(p, tat, when - 1, 3).result.allowed);
    EXPECT_TRUE(gcra_decide(p, tat, when, 3).result.allowed);
}

TEST(Gcra, KeyLivesUntilTheLimiterIsFullAgain) {
    const gcra_params p{10'000, 20};
    const std::int64_t now = 1'000'000'000'000'000;
    const auto s = gcra_decide(p, std::nullopt, now, 5);
    ASSERT_TRUE(s.result.allowed);
    EXPECT_EQ(s.result.reset_after, 50'000us);
    EXPECT_EQ(s.ttl_ms, 50);
    // Once the TAT is past, the stored state is the same as none.
    const auto later = gcra_decide(p, s.tat, now + 50'000, 20);
    EXPECT_TRUE(later.result.allowed);
}

TEST(Gcra, ClientRetryingAfterRetryAfterGetsTheRate) {
    // Tightness: obeying retry_after, a greedy client gets burst + rate * t, minus at most one.
    for (const auto& p : param_sets) {
        std::optional<gcra_tat> tat;
        const std::int64_t start = 1'700'000'000'000'000;
        std::int64_t now = start;
        std::uint64_t got = 0;
        const auto span = static_cast<std::int64_t>(p.interval_us * 1000);
        while (now <= start + span) {
            const auto s = gcra_decide(p, tat, now, 1);
            tat = s.tat;
            if (s.result.allowed)
                ++got;
            else
                now += s.result.retry_after.count();
        }
        const double bound = p.burst + static_cast<double>(span) / p.interval_us;
        EXPECT_GE(static_cast<double>(got), bound - 1) << p.interval_us;
        EXPECT_LE(static_cast<double>(got), bound + 1e-6) << p.interval_us;
    }
}
