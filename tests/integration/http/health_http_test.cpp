// /healthz and /readyz of metrics_server against live redis-server processes, and the
// server's answers to requests it does not serve (unknown route, oversized request).
#include <redcoord/testing/http_client.hpp>

#include <redcoord/core/errors.hpp>
#include <redcoord/http/metrics_server.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <future>

namespace {

using namespace std::chrono_literals;
using redcoord::testing::http_test::client;
namespace http = redcoord::testing::http_test::http;
using redcoord::testing::local_server;

redcoord::metrics_server serve(redcoord::metrics_server_options o = {}) {
    return redcoord::metrics_server(std::function<std::string()>([] { return std::string{}; }),
                                    std::move(o));
}

TEST(HealthHttp, HealthzIs200AndReadyzWithoutEndpointsIs200) {
    auto s = serve();
    client c(s.port());
    auto h = c.get("/healthz");
    EXPECT_EQ(h.result(), http::status::ok);
    EXPECT_EQ(h.body(), "ok\n");
    auto r = c.get("/readyz");
    EXPECT_EQ(r.result(), http::status::ok);
    EXPECT_EQ(c.request(http::verb::post, "/healthz").result(), http::status::method_not_allowed);
}

TEST(HealthHttp, ReadyzIs200WhileEveryEndpointAnswers) {
    local_server a, b;
    redcoord::metrics_server_options o;
    o.ready_endpoints = {a.endpoint()};
    o.ready_pools = {std::make_shared<redcoord::connection_pool>(b.endpoint())};
    auto s = serve(o);
    client c(s.port());
    auto r = c.get("/readyz");
    EXPECT_EQ(r.result(), http::status::ok) << r.body();
    EXPECT_EQ(r.body().rfind("ready\n", 0), 0u) << r.body();
    EXPECT_NE(r.body().find("ok   redis://127.0.0.1:" + std::to_string(a.port())),
              std::string::npos)
        << r.body();
    EXPECT_NE(r.body().find(":" + std::to_string(b.port())), std::string::npos) << r.body();
}

TEST(HealthHttp, ReadyzIs503Within1500msOfAServerStoppingAndMasksItsPassword) {
    redcoord::testing::server_options so;
    so.password = "s3cret-pass";
    local_server down(so), up;
    redcoord::metrics_server_options o;
    o.ready_endpoints = {up.endpoint(), down.endpoint()};
    ASSERT_EQ(o.ready_endpoints[1].password, "s3cret-pass");
    auto s = serve(o);
    client c(s.port());
    ASSERT_EQ(c.get("/readyz").result(), http::status::ok);  // both pools now hold a connection

    down.kill();
    const auto t0 = std::chrono::steady_clock::now();
    auto r = c.get("/readyz");
    const auto took = std::chrono::steady_clock::now() - t0;
    EXPECT_EQ(r.result(), http::status::service_unavailable) << r.body();
    EXPECT_LT(took, 1500ms);
    EXPECT_EQ(r.body().rfind("not ready\n", 0), 0u) << r.body();
    const std::string failing = "FAIL redis://:***@127.0.0.1:" + std::to_string(down.port());
    EXPECT_NE(r.body().find(failing), std::string::npos) << r.body();
    EXPECT_NE(r.body().find("ok   redis://127.0.0.1:" + std::to_string(up.port())),
              std::string::npos)
        << r.body();
    EXPECT_EQ(r.body().find("s3cret-pass"), std::string::npos) << r.body();

    // Asked again (the pool now has to connect afresh): still 503, still within the bound.
    const auto t1 = std::chrono::steady_clock::now();
    EXPECT_EQ(c.get("/readyz").result(), http::status::service_unavailable);
    EXPECT_LT(std::chrono::steady_clock::now() - t1, 1500ms);

    down.restart();
    EXPECT_TRUE(redcoord::testing::eventually(
        [&] { return c.get("/readyz").result() == http::status::ok; }, 10s, 50ms));
}

TEST(HealthHttp, AHungServerIs503AndHealthzAnswersMeanwhile) {
    local_server hung;
    redcoord::metrics_server_options o;
    o.ready_endpoints = {hung.endpoint()};
    o.ready_timeout = 2000ms;  // long enough to ask /healthz while the probe waits
    auto s = serve(o);
    {
        client warm(s.port());
        ASSERT_EQ(warm.get("/readyz").result(), http::status::ok);
    }
    hung.pause();
    auto ready = std::async(std::launch::async, [&] {
        client c(s.port());
        return c.get("/readyz");
    });
    // The probe waits on the prober's thread; the server's thread still answers liveness.
    client c(s.port());
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(c.get("/healthz").result(), http::status::ok);
    EXPECT_EQ(ready.wait_for(0s), std::future_status::timeout)
        << "the probe should still be waiting for the paused server";
    auto r = ready.get();
    hung.resume();
    EXPECT_EQ(r.result(), http::status::service_unavailable) << r.body();
    EXPECT_NE(r.body().find("no reply within the deadline"), std::string::npos) << r.body();
}

TEST(HealthHttp, UnknownRouteIs404) {
    auto s = serve();
    client c(s.port());
    EXPECT_EQ(c.get("/nope").result(), http::status::not_found);
    EXPECT_EQ(c.get("/healthzz").result(), http::status::not_found);
}

TEST(HealthHttp, OversizedRequestIs413AndHugeHeadersAre431) {
    redcoord::metrics_server_options o;
    o.max_body_bytes = 1024;
    auto s = serve(o);
    {
        client c(s.port());
        auto r = c.request(http::verb::post, "/metrics", std::string(4096, 'x'));
        EXPECT_EQ(r.result(), http::status::payload_too_large);
        EXPECT_FALSE(r.keep_alive());
    }
    {
        client c(s.port());
        http::request<http::string_body> req{http::verb::get, "/healthz", 11};
        req.set("X-Filler", std::string(32 * 1024, 'y'));
        EXPECT_EQ(c.send(req).result(), http::status::request_header_fields_too_large);
    }
    client c(s.port());  // the server still serves
    EXPECT_EQ(c.get("/healthz").result(), http::status::ok);
}

TEST(HealthHttp, ExtraHandlersServeTheirRoutesWithQueryParameters) {
    redcoord::metrics_server_options o;
    o.handlers.push_back(
        [](const redcoord::http_request& r) -> std::optional<redcoord::http_response> {
            if (r.path != "/hello") return std::nullopt;
            return redcoord::http_response{
                200, "text/plain", "hi " + r.param("who").value_or("?"), {{"X-Test", "1"}}};
        });
    auto s = serve(o);
    client c(s.port());
    auto r = c.get("/hello?x=1&who=a%20b+c");
    EXPECT_EQ(r.result(), http::status::ok);
    EXPECT_EQ(r.body(), "hi a b c");
    EXPECT_EQ(r["X-Test"], "1");
    EXPECT_EQ(c.get("/other").result(), http::status::not_found);
}

TEST(HealthHttp, BadOptionsAreRefused) {
    redcoord::metrics_server_options o;
    o.ready_timeout = 0ms;
    EXPECT_THROW(serve(o), redcoord::invalid_argument);
    redcoord::metrics_server_options p;
    p.ready_pools.push_back(nullptr);
    EXPECT_THROW(serve(p), redcoord::invalid_argument);
}

}  // namespace
