// `redcoord dashboard`: the page and its JSON over HTTP, for primitives held by other
// `redcoord` processes; SIGTERM ends it with status 0.
#include "../http/http_client.hpp"
#include "cli_harness.hpp"

#include <csignal>
#include <regex>

using namespace cli_test;

namespace {

namespace http = redcoord::test_http::http;

std::optional<std::uint16_t> dashboard_port(const std::string& output) {
    static const std::regex re(R"(dashboard of '[^']*' at http://127\.0\.0\.1:([0-9]+)/)");
    std::smatch m;
    if (!std::regex_search(output, m, re)) return std::nullopt;
    return static_cast<std::uint16_t>(std::stoi(m[1]));
}

http::response<http::string_body> get(std::uint16_t port, const std::string& target) {
    redcoord::test_http::client c(port);
    return c.get(target);
}

}  // namespace

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
