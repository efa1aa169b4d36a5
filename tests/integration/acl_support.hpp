#pragma once
// Test support for the least-privilege ACL tests of every part (issue 18): creates a Redis
// user with exactly a part's acl_needs (optionally minus one command) on a real server, and
// times how fast a refusal surfaces.

#include <redcoord/core/acl.hpp>
#include <redcoord/core/connection.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>

namespace redcoord::testing {

inline constexpr std::string_view acl_password = "acl-test-password";

// `needs` without the command `missing` (nothing removed when empty).
inline acl_needs without_command(acl_needs needs, std::string_view missing) {
    if (!missing.empty()) {
        const auto before = needs.commands.size();
        std::erase(needs.commands, std::string(missing));
        EXPECT_EQ(needs.commands.size() + 1, before)
            << "'" << missing << "' is not among the needs";
    }
    return needs;
}

// Creates (or redefines) `user` on `server` with exactly `needs` and a password, through the
// same ACL SETUSER words `redcoord acl-rules` prints, and returns an endpoint logging in as it.
// User names must differ between tests of one process: the runtime shares pub/sub links per
// endpoint (user included).
inline endpoint make_acl_user(const local_server& server, std::string_view user,
                              const acl_needs& needs) {
    connection admin(server.endpoint());
    auto argv = acl_setuser_argv(user, needs);
    argv.push_back(">" + std::string(acl_password));
    (void)admin.command(argv);
    endpoint ep = server.endpoint();
    ep.user = std::string(user);
    ep.password = std::string(acl_password);
    return ep;
}

// Runs `op`, which must throw permission_error naming `command` (in command() and in what())
// within `bound`; returns the time it took.
inline std::chrono::milliseconds expect_refused(std::string_view command,
                                                std::chrono::milliseconds bound,
                                                const std::function<void()>& op);

// The same for a refusal that may name either of `commands` (EVAL on a connection's first
// run of a script, EVALSHA after), all checked the same way.
inline void expect_refused_any(std::initializer_list<std::string_view> commands,
                               std::chrono::milliseconds bound, const std::function<void()>& op) {
    const auto t0 = std::chrono::steady_clock::now();
    try {
        op();
        ADD_FAILURE() << "no permission_error";
    } catch (const permission_error& e) {
        bool ok = false;
        for (auto c : commands) ok = ok || e.command() == c;
        EXPECT_TRUE(ok) << "command() = " << e.command() << ", what() = " << e.what();
    } catch (const std::exception& e) {
        ADD_FAILURE() << "expected permission_error, got: " << e.what();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - t0, bound * sanitizer_stretch());
}

inline std::chrono::milliseconds expect_refused(std::string_view command,
                                                std::chrono::milliseconds bound,
                                                const std::function<void()>& op) {
    const auto t0 = std::chrono::steady_clock::now();
    try {
        op();
        ADD_FAILURE() << "no permission_error for a user without '" << command << "'";
    } catch (const permission_error& e) {
        const std::string what = e.what();
        std::string upper(command.substr(0, command.find('|')));  // PUBSUB for pubsub|channels
        std::transform(upper.begin(), upper.end(), upper.begin(),
                       [](unsigned char c) { return std::toupper(c); });
        // Redis 7.0 does not name a command refused inside a script: the message then lists
        // the script's commands (upper case) and command() is EVAL/EVALSHA.
        const bool named = e.command() == command ||
                           what.find("'" + std::string(command) + "'") != std::string::npos;
        const bool listed = (e.command() == "evalsha" || e.command() == "eval") &&
                            what.find(upper) != std::string::npos;
        EXPECT_TRUE(named || listed) << "command() = " << e.command() << ", what() = " << what;
    } catch (const std::exception& e) {
        ADD_FAILURE() << "expected permission_error for '" << command << "', got: " << e.what();
    }
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - t0);
    // A refusal comes at once; the bound is for a loaded machine, and longer under a sanitizer.
    EXPECT_LT(took, bound * sanitizer_stretch())
        << "refusal of '" << command << "' took " << took.count() << " ms";
    return took;
}

}  // namespace redcoord::testing
