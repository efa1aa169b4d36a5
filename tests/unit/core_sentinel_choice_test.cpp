// Which address a Sentinel resolution round uses (review finding C10), without servers.
#include "sentinel_resolve.hpp"

#include <gtest/gtest.h>

#include <vector>

using namespace redcoord;
using detail::choose_master;
using detail::master_candidate;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {
const host_port old_master{"10.0.0.1", 6379};
const host_port new_master{"10.0.0.2", 6379};
const host_port promoted{"10.0.0.3", 6379};
}  // namespace

// C10: a majority's address that failed once (a new master's first connect failed) must not
// lose to the address a minority still names (perhaps a demoted master, partitioned from the
// sentinels but reachable from here, which would take writes that the failover discards).
TEST(SentinelChoice, C10_MajorityWinsWhileSentinelsDisagreeEvenWhenSuspected) {
    const auto t = clock_type::now();
    std::vector<master_candidate> c{{new_master, 2, t}, {old_master, 1, std::nullopt}};
    EXPECT_EQ(choose_master(c), 0u);
    c[1].suspected_since = t - 500ms;  // both failing: still the majority
    EXPECT_EQ(choose_master(c), 0u);
}

TEST(SentinelChoice, C10_UnanimousSentinelsRotateThroughFailingCandidates) {
    const auto t = clock_type::now();
    // All sentinels agree on a failing address; the promoted replica (no votes) is tried.
    std::vector<master_candidate> c{{old_master, 3, t}, {promoted, 0, std::nullopt}};
    EXPECT_EQ(choose_master(c), 1u);
    // Every candidate failed: the one that failed longest ago.
    c[1].suspected_since = t - 200ms;
    EXPECT_EQ(choose_master(c), 1u);
    c[0].suspected_since = t - 900ms;
    EXPECT_EQ(choose_master(c), 0u);
}

TEST(SentinelChoice, C10_HealthyMajorityIsChosen) {
    std::vector<master_candidate> c{{new_master, 3, std::nullopt}};
    EXPECT_EQ(choose_master(c), 0u);
    c.push_back({old_master, 1, std::nullopt});
    EXPECT_EQ(choose_master(c), 0u);
}
