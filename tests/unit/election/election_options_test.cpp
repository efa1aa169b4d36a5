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
    EXPECT_EQ(r.replication.replicas, 0u);
    EXPECT_EQ(r.prefix, default_prefix);

    election_options o;
    o.term = 300ms;
    r = resolve("jobs", o);
    EXPECT_EQ(r.retry_period, 100ms);
    EXPECT_EQ(r.drift, 5ms);
    // Zero is "default" for the retry period, as for the other parts' computed fields.
    o.retry_period = 0ms;
    EXPECT_EQ(resolve("jobs", o).retry_period, 100ms);
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
    EXPECT_THROW((void)resolve("n", bad([](auto& o) {
                                   o.term = 300ms;
                                   o.retry_period = 300ms;
                               })),
                 invalid_argument);
    EXPECT_THROW((void)resolve("n", bad([](auto& o) {
                                   o.term = 300ms;
                                   o.retry_period = 301ms;
                               })),
                 invalid_argument);
    EXPECT_THROW((void)resolve("n", bad([](auto& o) { o.retry_period = -1ms; })), invalid_argument);
    EXPECT_THROW((void)resolve("n", bad([](auto& o) {
                                   o.term = 2ms;
                                   o.drift = 0ms;
                                   o.retry_period = 0ms;
                               })),
                 invalid_argument);  // term / 3 == 0 ms is still refused once defaulted
    EXPECT_THROW((void)resolve("n", bad([](auto& o) {
                                   o.term = 300ms;
                                   o.drift = 300ms;
                               })),
                 invalid_argument);
    EXPECT_THROW((void)resolve("n", bad([](auto& o) { o.drift = -1ms; })), invalid_argument);
    EXPECT_THROW((void)resolve("n", bad([](auto& o) {
                                   o.replication.replicas = 1;
                                   o.replication.timeout = 0ms;
                               })),
                 invalid_argument);
    // Edge values that are allowed.
    EXPECT_NO_THROW((void)resolve("n", bad([](auto& o) {
                                      o.term = 100ms;
                                      o.retry_period = 50ms;
                                      o.drift = 0ms;
                                  })));
    EXPECT_NO_THROW(
        (void)resolve("n", bad([](auto& o) { o.identity = "with space and ünïcode"; })));
}

namespace {
election_options with(std::chrono::milliseconds term,
                      std::optional<std::chrono::milliseconds> retry = {}, std::size_t replicas = 0,
                      std::chrono::milliseconds replica_timeout = 100ms) {
    election_options o;
    o.term = term;
    o.retry_period = retry.value_or(std::chrono::milliseconds::zero());
    o.replication.replicas = replicas;
    o.replication.timeout = replica_timeout;
    return o;
}
std::string message_of(const election_options& o) {
    try {
        (void)resolve("n", o);
    } catch (const invalid_argument& e) {
        return e.what();
    }
    return "";
}
}  // namespace

// A retry period close to term - drift makes every renewal land after the deadline, so the
// leader flaps; half of it leaves room for one lost renewal (client-go's rule, in spirit).
TEST(ElectionOptions, M8_RetryPeriodLeavesRoomForOneLostRenewal) {
    // term 1000 ms: drift 12 ms, so (term - drift) / 2 = 494 ms.
    EXPECT_THROW((void)resolve("n", with(1000ms, 990ms)), invalid_argument);
    EXPECT_THROW((void)resolve("n", with(1000ms, 495ms)), invalid_argument);
    EXPECT_NO_THROW((void)resolve("n", with(1000ms, 494ms)));
    const auto m = message_of(with(1000ms, 990ms));
    EXPECT_NE(m.find("retry_period"), std::string::npos) << m;
    EXPECT_NE(m.find("494"), std::string::npos) << m;  // tells the largest allowed value
}

// A renewal sent one retry period after the last one must be confirmed, WAIT included, before
// the deadline; replica_timeout is checked only when replicas are asked for.
TEST(ElectionOptions, M8_ReplicaTimeoutFitsBeforeTheDeadline) {
    // term 1000: retry 333, drift 12: 333 + replica_timeout must stay below 988.
    EXPECT_THROW((void)resolve("n", with(1000ms, {}, 1, 700ms)), invalid_argument);
    EXPECT_THROW((void)resolve("n", with(1000ms, {}, 1, 655ms)), invalid_argument);
    EXPECT_NO_THROW(
        (void)resolve("n", with(1000ms, {}, 1, 400ms)));  // tests/fault/election uses this
    EXPECT_NO_THROW((void)resolve("n", with(300ms, {}, 0, 5000ms)));  // ignored without replicas
    const auto m = message_of(with(1000ms, {}, 1, 700ms));
    EXPECT_NE(m.find("replication.timeout"), std::string::npos) << m;
}

// The term/3 default of a 2 ms term is 0: the error must name the term the user set, not the
// retry_period they never set.
TEST(ElectionOptions, M8_TooShortTermIsBlamedOnTheTerm) {
    for (auto t : {1ms, 2ms, 3ms}) {
        const auto m = message_of(with(t));
        EXPECT_NE(m.find("term of " + std::to_string(t.count()) + " ms is too short"),
                  std::string::npos)
            << m;
    }
    EXPECT_NO_THROW((void)resolve("n", with(4ms)));
}

// Every combination the examples, tools, benches and tests use still validates.
TEST(ElectionOptions, M8_DefaultsOfEveryTermInUseValidate) {
    for (auto t : {100ms, 300ms, 400ms, 600ms, 1000ms, 1500ms, 2000ms, 5000ms, 8000ms, 9000ms,
                   10000ms, 20000ms})
        EXPECT_NO_THROW((void)resolve("n", with(t))) << t.count();
    EXPECT_NO_THROW((void)resolve("n", with(2000ms, 300ms)));             // sentinel failover test
    EXPECT_NO_THROW((void)resolve("n", with(8000ms, 3000ms, 1, 100ms)));  // sentinel race test
    EXPECT_NO_THROW((void)resolve("n", with(2000ms, {}, 1, 400ms)));      // fault failover test
    EXPECT_NO_THROW((void)resolve("n", {}));
}

// The epoch counter expires (keyspace hygiene), but not before the selector it numbers.
TEST(ElectionOptions, EpochCounterTtlIsBoundedBelowByTheTerm) {
    auto o = with(1000ms);
    o.epoch_ttl = 999ms;
    EXPECT_THROW((void)resolve("n", o), invalid_argument);
    o.epoch_ttl = 1000ms;
    EXPECT_EQ(resolve("n", o).epoch_ttl, 1000ms);
    EXPECT_EQ(resolve("n", {}).epoch_ttl, std::chrono::hours(24));
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
    EXPECT_EQ(k.candidates, "redcoord:election:{jobs}:candidates");
}

TEST(RevokeReason, Names) {
    EXPECT_EQ(to_string(revoke_reason::lost), "lost");
    EXPECT_EQ(to_string(revoke_reason::expired), "expired");
    EXPECT_EQ(to_string(revoke_reason::resigned), "resigned");
    EXPECT_EQ(to_string(revoke_reason::connection), "connection");
}
