// metrics_server over a real socket: the scrape's status, content type and body; 404 and 405;
// keep-alive; port 0 picks one; a stop with a client still connected does not hang.
#include <redcoord/core/errors.hpp>
#include <redcoord/http/metrics_server.hpp>
#include <redcoord/testing/http_client.hpp>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <future>

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

using client = redcoord::testing::http_test::client;

std::shared_ptr<redcoord::metrics_registry> sample_registry() {
    auto r = std::make_shared<redcoord::metrics_registry>();
    r->counter({"redcoord_lock_lost_total", "Holdings lost.", {}},
               {{"kind", "lock"}, {"name", "a\"b"}})
        ->inc(2);
    return r;
}

const char* const expected =
    "# HELP redcoord_lock_lost_total Holdings lost.\n"
    "# TYPE redcoord_lock_lost_total counter\n"
    "redcoord_lock_lost_total{kind=\"lock\",name=\"a\\\"b\"} 2\n";

TEST(MetricsServer, ServesTheRegistryAtMetrics) {
    redcoord::metrics_server s(sample_registry());
    ASSERT_NE(s.port(), 0);
    EXPECT_EQ(s.url(), "http://127.0.0.1:" + std::to_string(s.port()) + "/metrics");
    client c(s.port());
    auto res = c.request(http::verb::get, "/metrics");
    EXPECT_EQ(res.result(), http::status::ok);
    EXPECT_EQ(res[http::field::content_type], "text/plain; version=0.0.4; charset=utf-8");
    EXPECT_EQ(res.body(), expected);
    // The same connection again (keep-alive), with a query string, then HEAD.
    auto again = c.request(http::verb::get, "/metrics?x=1");
    EXPECT_EQ(again.result(), http::status::ok);
    EXPECT_EQ(again.body(), expected);
    auto head = c.request(http::verb::head, "/metrics");
    EXPECT_EQ(head.result(), http::status::ok);
    EXPECT_EQ(head[http::field::content_length], std::to_string(std::string(expected).size()));
}

TEST(MetricsServer, OtherPathsAre404OtherMethods405) {
    redcoord::metrics_server s(sample_registry());
    client c(s.port());
    EXPECT_EQ(c.request(http::verb::get, "/").result(), http::status::not_found);
    EXPECT_EQ(c.request(http::verb::get, "/metricsx").result(), http::status::not_found);
    EXPECT_EQ(c.request(http::verb::post, "/metrics").result(), http::status::method_not_allowed);
}

TEST(MetricsServer, ScrapeSeesCurrentValuesAndBodyErrorsAre500) {
    auto r = sample_registry();
    redcoord::metrics_server s(r);
    r->gauge({"g", "", {}}, {})->set(7);
    client c(s.port());
    EXPECT_NE(c.request(http::verb::get, "/metrics").body().find("\ng 7\n"), std::string::npos);
    redcoord::metrics_server failing(
        []() -> std::string { throw std::runtime_error("collector down"); });
    client f(failing.port());
    auto res = f.request(http::verb::get, "/metrics");
    EXPECT_EQ(res.result(), http::status::internal_server_error);
}

TEST(MetricsServer, StopNeverWaitsForAClient) {
    auto s = std::make_unique<redcoord::metrics_server>(sample_registry());
    // A client that connects and sends half a request, then stays.
    client idle(s->port());
    net::write(idle.sock, net::buffer(std::string("GET /metr")));
    auto done = std::async(std::launch::async, [&] { s.reset(); });
    EXPECT_EQ(done.wait_for(std::chrono::seconds(5)), std::future_status::ready);
}

TEST(MetricsServer, BadAddressOrBusyPortThrows) {
    EXPECT_THROW(redcoord::metrics_server(sample_registry(), {.address = "not an address"}),
                 redcoord::invalid_argument);
    redcoord::metrics_server first(sample_registry());
    redcoord::metrics_server_options o;
    o.port = first.port();
    EXPECT_THROW(redcoord::metrics_server(sample_registry(), o), redcoord::error);
}

}  // namespace
