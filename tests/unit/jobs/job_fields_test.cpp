// The job's options field (jobs/src/job_fields.hpp): what an add writes is what a worker and
// get() read back; a malformed server value is a typed error.

#include "job_fields.hpp"

#include <redcoord/core/errors.hpp>

#include <gtest/gtest.h>

using namespace std::chrono_literals;
using namespace redcoord;

TEST(JobFields, OptionsRoundTripPriorityAndMaxAttempts) {
    job_options o;
    o.priority = 9;
    o.max_attempts = 4000000000U;
    o.backoff = backoff_policy::exponential(100ms, 30s, 0.25);
    const auto field = detail::encode_job_options(o);
    EXPECT_EQ(field, "9 4000000000 e 100 30000 0.250000");
    const auto back = detail::decode_job_options(field);
    EXPECT_EQ(back.priority, 9);
    EXPECT_EQ(back.max_attempts, 4000000000U);
}

TEST(JobFields, AFixedBackOffCarriesItsBaseAsTheMaximum) {
    job_options o;
    o.backoff = backoff_policy::fixed(250ms);
    EXPECT_EQ(detail::encode_job_options(o), "0 3 f 250 250 0.000000");  // 3 attempts by default
}

TEST(JobFields, MalformedOptionsAreTypedErrors) {
    for (const char* bad : {"", "x", "1", "1 ", "1 y f", "-", "1 2"})
        EXPECT_THROW((void)detail::decode_job_options(bad), error) << bad;
}

TEST(JobFields, ActiveMembersNameTheirJobAfterTheToken) {
    EXPECT_EQ(detail::active_member_id("a1b2:job"), "job");
    // Ids may hold ':' themselves; tokens never do.
    EXPECT_EQ(detail::active_member_id("a1b2:repeat:tick:1700000000000"),
              "repeat:tick:1700000000000");
}
