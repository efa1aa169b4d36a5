// Usage errors, bad URLs, missing servers, passwords: documented exit codes, one-line messages,
// passwords never printed.
#include "cli_harness.hpp"

#include <redcoord/testing/local_sentinel.hpp>
#include <redcoord/version.hpp>

using namespace cli_test;

namespace {

struct ErrorsCli : ::testing::Test {
    temp_dir dir;
};

}  // namespace

TEST_F(ErrorsCli, HelpListsExitCodes) {
    auto r = run(dir, {"--help"});
    EXPECT_EQ(r.status, 0);
    for (const char* s : {"Exit status:", "124", "125", "120", "121", "lock", "elect", "queue"})
        EXPECT_TRUE(contains(r.output, s)) << s;
    auto sub = run(dir, {"queue", "pop", "--help"});
    EXPECT_EQ(sub.status, 0);
    EXPECT_TRUE(contains(sub.output, "--visibility"));
}

TEST_F(ErrorsCli, VersionPrintsTheLibrarysNumber) {
    auto r = run(dir, {"--version"});
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.output, std::string("redcoord ") + REDCOORD_VERSION_STRING + "\n");
}

TEST_F(ErrorsCli, UsageErrorsExit2) {
    EXPECT_EQ(run(dir, {}).status, code::usage);
    EXPECT_EQ(run(dir, {"frobnicate"}).status, code::usage);
    EXPECT_EQ(run(dir, {"lock", "x"}).status, code::usage);  // no CMD
    auto d = run(dir, {"lock", "x", "--ttl", "10parsecs", "--", "true"});
    EXPECT_EQ(d.status, code::usage);
    EXPECT_TRUE(contains(d.output, "bad duration '10parsecs'")) << d.output;
    EXPECT_EQ(run(dir, {"barrier", "b"}).status, code::usage);  // --parties missing
    EXPECT_EQ(run(dir, {"wait", "a", "--any", "--all"}).status, code::usage);
}

TEST_F(ErrorsCli, BadUrlIsUsageErrorWithoutPassword) {
    auto r = run(dir, {"--redis", "http://:hunter2@localhost", "signal", "c"});
    EXPECT_EQ(r.status, code::usage);
    EXPECT_TRUE(contains(r.output, "redcoord: error: ")) << r.output;
    EXPECT_FALSE(contains(r.output, "hunter2")) << r.output;
    EXPECT_EQ(lines_of(r.output).size(), 1u) << r.output;
}

TEST_F(ErrorsCli, MissingServerIsConnectionError) {
    const auto port = std::to_string(redcoord::testing::free_port());
    auto r = run(dir, {"--redis", "redis://127.0.0.1:" + port, "lock", "x", "--", "echo", "ran"});
    EXPECT_EQ(r.status, code::connection) << r.output;
    EXPECT_FALSE(contains(r.output, "ran"));
    EXPECT_TRUE(contains(r.output, "redcoord: error: ")) << r.output;
    EXPECT_EQ(lines_of(r.output).size(), 1u) << r.output;
    EXPECT_EQ(run(dir, {"--redis", "redis://127.0.0.1:" + port, "queue", "push", "q", "x"}).status,
              code::connection);
}

TEST_F(ErrorsCli, WrongPasswordIsAuthErrorAndEnvPasswordWorks) {
    redcoord::testing::server_options o;
    o.password = "right-pw";
    redcoord::testing::local_server server(o);
    auto no_password = server.endpoint();
    no_password.password.clear();
    const std::string plain = no_password.to_string();  // with its TLS options in a TLS run
    std::string with_wrong = plain;
    with_wrong.insert(with_wrong.find("://") + 3, ":wrong-pw@");
    auto wrong = run(dir, {"--redis", with_wrong, "signal", "c"});
    EXPECT_EQ(wrong.status, code::auth) << wrong.output;
    EXPECT_FALSE(contains(wrong.output, "wrong-pw")) << wrong.output;
    auto none = run(dir, {"--redis", plain, "signal", "c"});
    EXPECT_EQ(none.status, code::auth) << none.output;
    auto env = run(dir, {"--redis", plain, "signal", "c"}, {"REDCOORD_PASSWORD=right-pw"});
    EXPECT_EQ(env.status, 0) << env.output;
    auto envwrong =
        run(dir, {"--redis", plain, "lock", "x", "--", "true"}, {"REDCOORD_PASSWORD=nope-pw"});
    EXPECT_EQ(envwrong.status, code::auth) << envwrong.output;
    EXPECT_FALSE(contains(envwrong.output, "nope-pw"));
}

TEST_F(ErrorsCli, SentinelPasswordComesFromTheEnvironment) {
    // Sentinels with their own password (issue 18): REDCOORD_SENTINEL_PASSWORD gives it
    // without putting it in the URL; without it the sentinels refuse (auth, exit 121).
    redcoord::testing::local_sentinel_options o;
    o.sentinel_password = "sentinel-pw";
    o.server.password = "data-pw";
    redcoord::testing::local_sentinel svc(o);
    const std::string url = svc.url();  // no password in it
    auto ok = run(dir, {"--redis", url, "signal", "c"},
                  {"REDCOORD_PASSWORD=data-pw", "REDCOORD_SENTINEL_PASSWORD=sentinel-pw"});
    EXPECT_EQ(ok.status, 0) << ok.output;
    auto none = run(dir, {"--redis", url, "signal", "c"}, {"REDCOORD_PASSWORD=data-pw"});
    EXPECT_EQ(none.status, code::auth) << none.output;
    auto wrong = run(dir, {"--redis", url, "signal", "c"},
                     {"REDCOORD_PASSWORD=data-pw", "REDCOORD_SENTINEL_PASSWORD=nope-pw"});
    EXPECT_EQ(wrong.status, code::auth) << wrong.output;
    EXPECT_FALSE(contains(wrong.output, "nope-pw")) << wrong.output;
}

TEST_F(ErrorsCli, EnvironmentNamesTheServer) {
    redcoord::testing::local_server server;
    auto r = run(dir, {"--json", "signal", "c", "x"}, {"REDCOORD_REDIS=" + server.url()});
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output, "{\"channel\":\"c\",\"receivers\":0}\n");
    // Only lock takes several servers.
    auto two =
        run(dir, {"signal", "c"}, {"REDCOORD_REDIS=" + server.url() + ",redis://127.0.0.1:1"});
    EXPECT_EQ(two.status, code::usage) << two.output;
}

TEST_F(ErrorsCli, WrongTypeIsServerError) {
    redcoord::testing::local_server server;
    server.command({"SET", "redcoord:queue:{str}", "not a list"});
    auto r = run(dir, {"--redis", server.url(), "queue", "push", "str", "x"});
    EXPECT_EQ(r.status, code::server) << r.output;
}
