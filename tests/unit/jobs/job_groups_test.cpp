// Groups, dedupe windows and debounce on the client side (jobs/src/job_groups.hpp), without a
// server: the checks that run before anything is sent, and the server's refusal as a type.
#include "job_groups.hpp"

#include <redcoord/core/errors.hpp>

#include <gtest/gtest.h>

using namespace redcoord;
using namespace std::chrono_literals;

TEST(JobGroups, GroupNamesThatWouldBreakTheKeysAreRefused) {
    EXPECT_NO_THROW(detail::validate_group("tenant-42"));
    EXPECT_NO_THROW(detail::validate_group("org:7/team a"));
    EXPECT_NO_THROW(detail::validate_group(std::string(max_group_length, 'x')));
    const std::vector<std::string> bad{"",     "a}b",
                                       "}",    "{a",
                                       "a\nb", std::string("a\0b", 3),
                                       "\x7f", std::string(max_group_length + 1, 'x')};
    for (const auto& b : bad) EXPECT_THROW(detail::validate_group(b), invalid_group) << b;
}

TEST(JobGroups, WindowsNeedAnIdAndNoNegativeValues) {
    job_options o;
    EXPECT_NO_THROW(detail::check_group_options(o));
    EXPECT_FALSE(detail::needs_format2(o));
    o.group = "g";
    EXPECT_TRUE(detail::needs_format2(o));
    o.dedupe_for = 1s;
    EXPECT_THROW(detail::check_group_options(o), invalid_argument);  // no id
    o.id = "x";
    EXPECT_NO_THROW(detail::check_group_options(o));
    o.debounce = -1ms;
    EXPECT_THROW(detail::check_group_options(o), invalid_argument);
    o.debounce = 1ms;
    o.depends_on = {"y"};
    EXPECT_THROW(detail::check_group_options(o), invalid_argument);
    o.depends_on.clear();
    o.dedupe_for = -1ms;
    EXPECT_THROW(detail::check_group_options(o), invalid_argument);
}

TEST(JobGroups, TheServersRefusalNamesTheJobAndItsState) {
    std::vector<std::pair<std::string, job_options>> sent(2);
    sent[0].second.id = "a";
    sent[1].second.id = "b";
    EXPECT_NO_THROW(detail::throw_if_debounce_refusal("ERR something else", sent));
    try {
        detail::throw_if_debounce_refusal("ERR JOBSTARTED 2 active", sent);
        FAIL();
    } catch (const debounce_refused& e) {
        EXPECT_EQ(e.job(), "b");
        EXPECT_EQ(e.state(), job_state::active);
    }
    try {
        detail::throw_if_debounce_refusal("JOBSTARTED 1 waiting_children", sent);
        FAIL();
    } catch (const debounce_refused& e) {
        EXPECT_EQ(e.job(), "a");
        EXPECT_EQ(e.state(), job_state::waiting_children);
    }
}
