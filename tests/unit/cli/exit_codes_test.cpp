#include "exit_codes.hpp"

#include <redcoord/core/errors.hpp>

#include <gtest/gtest.h>

#include <set>

using namespace redcoord::cli;

TEST(CliExitCodes, ErrorsMapByType) {
    EXPECT_EQ(exit_code_for(redcoord::auth_error("x")), auth);
    EXPECT_EQ(exit_code_for(redcoord::connection_error("x")), connection);
    EXPECT_EQ(exit_code_for(redcoord::timeout_error("x")), connection);
    EXPECT_EQ(exit_code_for(redcoord::pool_exhausted("x")), connection);
    EXPECT_EQ(exit_code_for(redcoord::outcome_unknown("x")), connection);
    EXPECT_EQ(exit_code_for(redcoord::invalid_argument("x")), usage);
    EXPECT_EQ(exit_code_for(redcoord::usage_error("x")), usage);
    EXPECT_EQ(exit_code_for(redcoord::payload_too_large("x")), usage);
    EXPECT_EQ(exit_code_for(redcoord::reply_error("x")), server);
    EXPECT_EQ(exit_code_for(redcoord::protocol_error("x")), server);
    EXPECT_EQ(exit_code_for(redcoord::error("x")), internal);
    EXPECT_EQ(exit_code_for(std::runtime_error("x")), internal);
}

TEST(CliExitCodes, CodesAreDistinctAndListedInHelp) {
    const std::set<int> codes{ok,       no,        usage, connection,     auth,     server,
                              internal, timed_out, lost,  cannot_execute, not_found};
    EXPECT_EQ(codes.size(), 11u);
    const std::string table = exit_code_table();
    for (int c : codes) {
        if (c == cannot_execute || c == not_found) continue;  // listed together as 126/127
        EXPECT_NE(table.find("  " + std::to_string(c) + " "), std::string::npos) << c;
    }
    EXPECT_NE(table.find("126/127"), std::string::npos);
    EXPECT_EQ(signal_exit(15), 143);
    EXPECT_EQ(signal_exit(2), 130);
}

namespace {
bool is_usage_error(const redcoord::error& e) {
    return dynamic_cast<const redcoord::usage_error*>(&e) != nullptr;
}
}  // namespace

// A caller mistake is a usage_error, whatever its kind, and never a server or I/O error: the
// CLI maps the whole family to exit status 2.
TEST(CliExitCodes, UsageErrorsAreOneFamily) {
    EXPECT_TRUE(is_usage_error(redcoord::invalid_argument("x")));
    EXPECT_TRUE(is_usage_error(redcoord::payload_too_large("x")));
    EXPECT_FALSE(is_usage_error(redcoord::reply_error("x")));
    EXPECT_FALSE(is_usage_error(redcoord::connection_error("x")));
}
