// Issue 34: the CLI under bad input and broken servers. Each case is named after the finding
// of the 2026-11-28 user review it pins (C1, C2, ...). Wall times are asserted, because the
// defects were hangs and overruns, not wrong codes alone.
#include "cli_harness.hpp"

using namespace cli_test;

namespace {

using clock_type = std::chrono::steady_clock;

struct timed_result {
    int status = -1;
    std::string output;
    std::chrono::milliseconds took{0};
};

timed_result run_timed(const temp_dir& dir, std::vector<std::string> args,
                       std::vector<std::string> env = {}, std::chrono::milliseconds limit = 20s) {
    const auto start = clock_type::now();
    auto r = run(dir, std::move(args), std::move(env), limit);
    return {r.status, std::move(r.output),
            std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - start)};
}

// What "at once" allows: process start, one connect and the elector's poll, well under the
// default connect (1 s) and command (2 s) timeouts that a hang would be bounded by.
constexpr auto at_once = 1000ms;
// The slack the issue allows past a deadline.
constexpr auto slack = 500ms;

std::string with_query(const std::string& url, const std::string& option) {
    return url + (contains(url, "?") ? "&" : "?") + option;
}

// A server that wants a password, and URLs for it without one and with a wrong one (with its
// TLS options in a TLS run).
struct password_server {
    redcoord::testing::local_server server{[] {
        redcoord::testing::server_options o;
        o.password = "right-pw";
        return o;
    }()};
    std::string plain = [this] {
        auto ep = server.endpoint();
        ep.password.clear();
        return ep.to_string();
    }();
    std::string wrong = [this] {
        std::string s = plain;
        s.insert(s.find("://") + 3, ":wrong-pw@");
        return s;
    }();
};

std::string unreachable_url() {
    return "redis://127.0.0.1:" + std::to_string(redcoord::testing::free_port());
}

struct Cli : ::testing::Test {
    temp_dir dir;
};

}  // namespace

TEST_F(Cli, C4_RedisAfterTheSubcommandTakesOneValue) {
    redcoord::testing::local_server server;
    const std::string url = server.url();
    auto leader = run(dir, {"leader", "--redis", url, "e1"});
    EXPECT_EQ(leader.status, code::no) << leader.output;  // no leader: it did run
    EXPECT_EQ(leader.output, "none\n");

    auto push = run(dir, {"queue", "push", "q9", "--redis", url, "a", "b"});
    EXPECT_EQ(push.status, 0) << push.output;
    EXPECT_EQ(lines_of(push.output).size(), 2u) << push.output;  // one id per payload

    auto lock = run(dir, {"lock", "--redis", url, "x", "--", "echo", "ran"});
    EXPECT_EQ(lock.status, 0) << lock.output;
    EXPECT_EQ(lock.output, "ran\n");

    // Global options on either side of the subcommand, --redis repeated on both.
    auto json = run(dir, {"signal", "--json", "c", "--prefix", "p:", "--redis", url, "x"});
    EXPECT_EQ(json.status, 0) << json.output;
    EXPECT_EQ(json.output, "{\"channel\":\"c\",\"receivers\":0}\n");
    const std::string missing = unreachable_url();
    auto two = run(dir, {"--redis", url, "signal", "--redis", missing, "c"});
    EXPECT_EQ(two.status, code::usage) << two.output;  // two servers given to a one-server command
    EXPECT_TRUE(contains(two.output, "got 2")) << two.output;
}

TEST_F(Cli, C5_UrlTimeoutsAreKeptUnlessAFlagIsGiven) {
    redcoord::testing::local_server server;
    const std::string url = server.url();
    server.pause();
    auto short_url =
        run_timed(dir, {"--redis", with_query(url, "connect_timeout=300ms"), "leader", "x"});
    auto long_url =
        run_timed(dir, {"--redis", with_query(url, "connect_timeout=2500ms"), "leader", "x"});
    auto flag = run_timed(dir, {"--connect-timeout", "300ms", "--redis",
                                with_query(url, "connect_timeout=2500ms"), "leader", "x"});
    server.resume();
    EXPECT_EQ(short_url.status, code::connection) << short_url.output;
    EXPECT_LT(short_url.took, 300ms + slack) << short_url.output;
    EXPECT_EQ(long_url.status, code::connection) << long_url.output;
    EXPECT_GE(long_url.took, 2500ms) << long_url.output;
    EXPECT_LT(long_url.took, 2500ms + slack) << long_url.output;
    EXPECT_EQ(flag.status, code::connection) << flag.output;
    EXPECT_LT(flag.took, 300ms + slack) << flag.output;

    // `0` waits forever for a reply, in the URL as documented and in the flag alike.
    auto zero_url = run(dir, {"--redis", with_query(url, "command_timeout=0"), "signal", "c"});
    EXPECT_EQ(zero_url.status, 0) << zero_url.output;
    auto zero_flag = run(dir, {"--command-timeout", "0", "--redis", url, "signal", "c"});
    EXPECT_EQ(zero_flag.status, 0) << zero_flag.output;
    auto zero_connect = run(dir, {"--connect-timeout", "0", "--redis", url, "signal", "c"});
    EXPECT_EQ(zero_connect.status, code::usage) << zero_connect.output;
    EXPECT_TRUE(contains(zero_connect.output, "--connect-timeout must be > 0"))
        << zero_connect.output;
}
