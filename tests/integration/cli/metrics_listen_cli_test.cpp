// `--metrics-listen ADDR` of `elect` and `lock`: the supervising process serves /metrics,
// /healthz and /readyz over HTTP while CMD runs.
#include "../http/http_client.hpp"
#include "cli_harness.hpp"

#include <regex>

using namespace cli_test;

namespace {

namespace http = redcoord::test_http::http;

// The port from `serving /metrics, /healthz and /readyz at http://127.0.0.1:PORT`.
std::optional<std::uint16_t> served_port(const std::string& output) {
    static const std::regex re(R"(/readyz at http://127\.0\.0\.1:([0-9]+))");
    std::smatch m;
    if (!std::regex_search(output, m, re)) return std::nullopt;
    return static_cast<std::uint16_t>(std::stoi(m[1]));
}

http::response<http::string_body> get(std::uint16_t port, const std::string& target) {
    redcoord::test_http::client c(port);
    return c.get(target);
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
