#include <redcoord/core/errors.hpp>
#include <redcoord/election/election_options.hpp>
#include <redcoord/election/leader_elector.hpp>

#include <gtest/gtest.h>

using namespace redcoord;
using namespace std::chrono_literals;

TEST(ElectionOptions, DefaultsFollowTheTerm) {
    auto r = resolve("jobs", {});
    EXPECT_EQ(r.term, 20000ms);
    EXPECT_EQ(r.retry_period, 20000ms / 3);
    EXPECT_EQ(r.drift, 202ms);  // term/100 + 2 ms
    EXPECT_FALSE(r.identity.empty());
    EXPECT_EQ(r.replicas, 0);

    election_options o;
    o.term = 300ms;
    r = resolve("jobs", o);
    EXPECT_EQ(r.retry_period, 100ms);
    EXPECT_EQ(r.drift, 5ms);
}

TEST(ElectionOptions, DefaultIdentitiesAreUniqueAndClean) {
    auto a = default_identity(), b = default_identity();
    EXPECT_NE(a, b);
    EXPECT_EQ(a.find_first_of("\r\n"), std::string::npos);
    EXPECT_EQ(std::count(a.begin(), a.end(), ':'), 2);
}

TEST(ElectionOptions, RejectsBadSettings) {
    auto bad = [](auto mutate) {
        election_options o;
        mutate(o);
        return o;
    };
    EXPECT_THROW((void)resolve("", {}), invalid_argument);
    EXPECT_THROW((void)resolve("a\nb", {}), invalid_argument);
    EXPECT_THROW((void)resolve("n", bad([](auto& o) { o.identity = "x\r"; })), invalid_argument);
    EXPECT_THROW((void)resolve("n", bad([](auto& o) { o.term = 0ms; })), invalid_argument);
    EXPECT_THROW((void)resolve("n", bad([](auto& o) { o.term = -5ms; })), invalid_argument);
    EXPECT_THROW((void)resolve("n", bad([](auto& o) { o.term = 300ms; o.retry_period = 300ms; })), invalid_argument);
    EXPECT_THROW((void)resolve("n", bad([](auto& o) { o.term = 300ms; o.retry_period = 301ms; })), invalid_argument);
    EXPECT_THROW((void)resolve("n", bad([](auto& o) { o.retry_period = 0ms; })), invalid_argument);
    EXPECT_THROW((void)resolve("n", bad([](auto& o) { o.term = 300ms; o.drift = 300ms; })), invalid_argument);
    EXPECT_THROW((void)resolve("n", bad([](auto& o) { o.drift = -1ms; })), invalid_argument);
    EXPECT_THROW((void)resolve("n", bad([](auto& o) { o.replicas = -1; })), invalid_argument);
    EXPECT_THROW((void)resolve("n", bad([](auto& o) { o.replicas = 1; o.replica_timeout = 0ms; })), invalid_argument);
    // Edge values that are allowed.
    EXPECT_NO_THROW((void)resolve("n", bad([](auto& o) { o.term = 100ms; o.retry_period = 99ms; o.drift = 0ms; })));
    EXPECT_NO_THROW((void)resolve("n", bad([](auto& o) { o.identity = "with space and ünïcode"; })));
}

TEST(ElectionOptions, DeadlineIsSendTimePlusTermMinusDrift) {
    const auto t0 = std::chrono::steady_clock::time_point(std::chrono::seconds(1000));
    EXPECT_EQ(leader_deadline(t0, 20000ms, 202ms), t0 + 19798ms);
    EXPECT_EQ(leader_deadline(t0, 100ms, 0ms), t0 + 100ms);
    static_assert(leader_deadline(std::chrono::steady_clock::time_point{}, 10ms, 3ms) ==
                  std::chrono::steady_clock::time_point{} + 7ms);
}

TEST(ElectionOptions, KeysShareOneHashSlot) {
    auto k = make_election_keys("redcoord:", "jobs");
    EXPECT_EQ(k.selector, "redcoord:election:{jobs}");
    EXPECT_EQ(k.epoch, "redcoord:election:{jobs}:epoch");
    EXPECT_EQ(k.channel, "redcoord:election:{jobs}:handoff");
}

TEST(RevokeReason, Names) {
    EXPECT_EQ(to_string(revoke_reason::lost), "lost");
    EXPECT_EQ(to_string(revoke_reason::expired), "expired");
    EXPECT_EQ(to_string(revoke_reason::resigned), "resigned");
    EXPECT_EQ(to_string(revoke_reason::connection), "connection");
}
