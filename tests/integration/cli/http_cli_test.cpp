// The commands that serve HTTP: `--metrics-listen ADDR` of `elect` and `lock` (the supervising
// process serves /metrics, /healthz and /readyz while CMD runs) and `redcoord dashboard` (the
// page and its JSON for primitives held by other `redcoord` processes; SIGTERM ends it with 0).
#include "cli_harness.hpp"

#include <redcoord/testing/http_client.hpp>

#include <csignal>

using namespace cli_test;

namespace {

namespace http = redcoord::testing::http_test::http;

using redcoord::testing::http_test::get;

// The port of `serving /metrics, /healthz and /readyz at http://127.0.0.1:PORT`.
std::optional<std::uint16_t> served_port(const std::string& output) {
    return redcoord::testing::http_test::printed_port(output, "/readyz at ");
}

// The port of `dashboard of 'P' at http://127.0.0.1:PORT/`.
std::optional<std::uint16_t> dashboard_port(const std::string& output) {
    return redcoord::testing::http_test::printed_port(output, "' at ");
}

struct MetricsListenCli : ::testing::Test {
    temp_dir dir;
};

}  // namespace

TEST_F(MetricsListenCli, ElectServesMetricsHealthAndReadiness) {
    redcoord::testing::local_server server;
    const std::string stop = dir.file("stop");
    cli_process p(
        {"--redis", server.url(), "elect", "svc", "--identity", "node-a", "--metrics-listen",
         "127.0.0.1:0", "--", "sh", "-c", "while [ ! -e " + stop + " ]; do sleep 0.02; done"},
        dir.file("out"));
    std::optional<std::uint16_t> port;
    ASSERT_TRUE(eventually([&] { return (port = served_port(p.output())).has_value(); }))
        << p.output();
    EXPECT_EQ(get(*port, "/healthz").result(), http::status::ok);
    auto ready = get(*port, "/readyz");
    EXPECT_EQ(ready.result(), http::status::ok) << ready.body();
    EXPECT_TRUE(contains(ready.body(), "127.0.0.1:" + std::to_string(server.port())))
        << ready.body();
    // Leading: the elector's gauge says so on the supervisor's /metrics.
    EXPECT_TRUE(eventually([&] {
        const auto m = get(*port, "/metrics").body();
        return contains(m, "redcoord_election_leader{") && contains(m, "} 1\n");
    })) << get(*port, "/metrics").body();
    EXPECT_EQ(get(*port, "/nope").result(), http::status::not_found);
    std::ofstream(stop).put('x');
    EXPECT_EQ(p.wait_for(10s), std::optional<int>(0)) << p.output();
}

TEST_F(MetricsListenCli, LockReadyzIs503NamingADeadRedlockServer) {
    redcoord::testing::local_server a, b, c;
    const std::string stop = dir.file("stop"), f = dir.file("f");
    cli_process p({"--redis", a.url(), "--redis", b.url(), "--redis", c.url(), "lock", "res",
                   "--metrics-listen", "0", "--", "sh", "-c",
                   "echo held > " + f + "; while [ ! -e " + stop + " ]; do sleep 0.02; done"},
                  dir.file("out"));
    std::optional<std::uint16_t> port;
    ASSERT_TRUE(eventually([&] { return (port = served_port(p.output())).has_value(); }))
        << p.output();
    ASSERT_TRUE(eventually([&] { return contains(read_file(f), "held"); })) << p.output();
    EXPECT_EQ(get(*port, "/readyz").result(), http::status::ok);
    c.kill();
    // A majority still holds the lock, so CMD runs on; readiness names the dead server.
    http::response<http::string_body> r;
    EXPECT_TRUE(eventually([&] {
        r = get(*port, "/readyz");
        return r.result() == http::status::service_unavailable;
    })) << r.body();
    EXPECT_TRUE(contains(r.body(), "FAIL redis://127.0.0.1:" + std::to_string(c.port())))
        << r.body();
    EXPECT_EQ(get(*port, "/healthz").result(), http::status::ok);
    EXPECT_TRUE(contains(get(*port, "/metrics").body(), "redcoord_"));
    std::ofstream(stop).put('x');
    EXPECT_EQ(p.wait_for(10s), std::optional<int>(0)) << p.output();
}

TEST_F(MetricsListenCli, ABadAddressIsAUsageErrorNamingTheFlag) {
    redcoord::testing::local_server server;
    auto r = run(dir, {"--redis", server.url(), "lock", "x", "--metrics-listen", "localhost:99999",
                       "--", "true"});
    EXPECT_EQ(r.status, code::usage) << r.output;
    EXPECT_TRUE(contains(r.output, "--metrics-listen")) << r.output;
}

TEST(DashboardCli, ServesThePageAndWhatOtherProcessesHold) {
    redcoord::testing::local_server server;
    temp_dir dir;
    const std::string stop = dir.file("stop");
    const std::string wait_stop = "while [ ! -e " + stop + " ]; do sleep 0.02; done";
    cli_process lock({"--redis", server.url(), "--prefix", "app:", "lock", "nightly", "--", "sh",
                      "-c", wait_stop},
                     dir.file("lock.out"));
    cli_process leader({"--redis", server.url(), "--prefix", "app:", "elect", "cron", "--identity",
                        "node-7", "--", "sh", "-c", wait_stop},
                       dir.file("elect.out"));
    cli_process board({"--redis", server.url(), "dashboard", "--listen", "127.0.0.1:0", "--prefix",
                       "app:", "--refresh", "500ms"},
                      dir.file("board.out"));
    std::optional<std::uint16_t> port;
    ASSERT_TRUE(eventually([&] { return (port = dashboard_port(board.output())).has_value(); }))
        << board.output();
    auto page = get(*port, "/");
    EXPECT_EQ(page.result(), http::status::ok);
    EXPECT_TRUE(contains(page.body(), "data-refresh=\"500\"")) << page.body();
    EXPECT_TRUE(eventually([&] {
        return contains(get(*port, "/api/locks").body(), R"("name":"nightly","held":true)");
    })) << get(*port, "/api/locks").body();
    EXPECT_TRUE(eventually([&] {
        return contains(get(*port, "/api/elections").body(), R"("name":"cron","leader":"node-7")");
    })) << get(*port, "/api/elections").body();
    EXPECT_EQ(get(*port, "/healthz").result(), http::status::ok);
    EXPECT_EQ(get(*port, "/readyz").result(), http::status::ok);
    std::ofstream(stop).put('x');
    EXPECT_EQ(lock.wait_for(10s), std::optional<int>(0)) << lock.output();
    EXPECT_EQ(leader.wait_for(10s), std::optional<int>(0)) << leader.output();
    board.signal(SIGTERM);
    EXPECT_EQ(board.wait_for(10s), std::optional<int>(0)) << board.output();
}

TEST(DashboardCli, AWrongPasswordEndsItAtOnce) {
    redcoord::testing::server_options so;
    so.password = "right";
    redcoord::testing::local_server server(so);
    temp_dir dir;
    auto r = run(dir, {"--redis", "redis://:wrong@127.0.0.1:" + std::to_string(server.port()),
                       "dashboard", "--listen", "0"});
    EXPECT_EQ(r.status, code::auth) << r.output;
    EXPECT_FALSE(contains(r.output, "wrong@")) << r.output;
}

TEST(DashboardCli, ActionsNeedATokenFileOfSixteenCharactersOrMore) {
    redcoord::testing::local_server server;
    temp_dir dir;
    auto none =
        run(dir, {"--redis", server.url(), "dashboard", "--listen", "0", "--allow-actions"});
    EXPECT_EQ(none.status, code::usage) << none.output;
    EXPECT_TRUE(contains(none.output, "--allow-actions needs --token-file")) << none.output;
    { std::ofstream(dir.file("short")) << "tooshort\n"; }
    auto short_token = run(dir, {"--redis", server.url(), "dashboard", "--listen", "0",
                                 "--allow-actions", "--token-file", dir.file("short")});
    EXPECT_EQ(short_token.status, code::usage) << short_token.output;
    EXPECT_FALSE(contains(short_token.output, "tooshort")) << "the token is never printed";
    auto missing = run(dir, {"--redis", server.url(), "dashboard", "--listen", "0",
                             "--allow-actions", "--token-file", dir.file("absent")});
    EXPECT_EQ(missing.status, code::usage) << missing.output;
    auto alone = run(dir, {"--redis", server.url(), "dashboard", "--listen", "0", "--token-file",
                           dir.file("short")});
    EXPECT_EQ(alone.status, code::usage) << alone.output;
}
