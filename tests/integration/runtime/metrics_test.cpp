// The core's metrics and log records (issue 20): connections in use, and reconnects of the
// pool and of the shared pub/sub link after the server is SIGKILLed and restarted, each with
// its log records (down, then up again).

#include "../metrics_support.hpp"

#include <redcoord/core/detail/pubsub_mux.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

using namespace std::chrono_literals;
using redcoord::testing::local_server;

namespace {

TEST(CoreMetrics, PoolInUseIsSampledAtScrape) {
    local_server server;
    metrics_test::observed_runtime o;
    redcoord::connection_pool pool(server.endpoint(), {}, o.rt);
    const auto series = "redcoord_pool_in_use{endpoint=\"" + server.endpoint().to_string() + "\"}";
    {
        auto c1 = pool.borrow();
        auto c2 = pool.borrow();
        EXPECT_EQ(o.value(series), 2);
    }
    EXPECT_EQ(o.value(series), 0);
}

TEST(CoreMetrics, PoolReconnectAfterServerKilledAndRestarted) {
    local_server server;
    metrics_test::observed_runtime o;
    auto ep = server.endpoint();
    ep.connect_timeout = 300ms;
    ep.command_timeout = 300ms;
    redcoord::connection_pool pool(ep, {}, o.rt);
    const auto series =
        "redcoord_reconnects_total{endpoint=\"" + ep.to_string() + "\",link=\"pool\"}";
    (void)pool.command({"PING"});
    EXPECT_EQ(o.value(series), 0);
    server.kill();
    EXPECT_THROW((void)pool.command({"PING"}), redcoord::error);
    server.restart();
    ASSERT_TRUE(metrics_test::eventually([&] {
        try {
            (void)pool.command({"PING"});
            return true;
        } catch (const redcoord::error&) {
            return false;
        }
    }));
    EXPECT_EQ(o.value(series), 1);
    const auto lost = o.sink->with_message("connection to the server lost");
    const auto back = o.sink->with_message("reconnected");
    ASSERT_EQ(lost.size(), 1u);
    ASSERT_EQ(back.size(), 1u);
    EXPECT_EQ(lost[0].component, "pool");
    EXPECT_EQ(lost[0].level, redcoord::log_level::warning);
    EXPECT_EQ(back[0].fields.at("endpoint"), ep.to_string());
}

TEST(CoreMetrics, AFirstConnectThatFailsIsNoBreakAndItsSuccessNoReconnect) {
    local_server server;
    metrics_test::observed_runtime o;
    auto ep = server.endpoint();
    ep.connect_timeout = 300ms;
    server.kill();  // down before the pool ever connects
    redcoord::connection_pool pool(ep, {}, o.rt);
    EXPECT_THROW((void)pool.command({"PING"}), redcoord::error);
    server.restart();
    ASSERT_TRUE(metrics_test::eventually([&] {
        try {
            (void)pool.command({"PING"});
            return true;
        } catch (const redcoord::error&) {
            return false;
        }
    }));
    EXPECT_EQ(
        o.value("redcoord_reconnects_total{endpoint=\"" + ep.to_string() + "\",link=\"pool\"}"), 0);
    EXPECT_TRUE(o.sink->with_message("connection to the server lost").empty());
    EXPECT_TRUE(o.sink->with_message("reconnected").empty());
}

TEST(CoreMetrics, PubsubLinkDownAndUpAfterServerKilledAndRestarted) {
    local_server server;
    metrics_test::observed_runtime o;
    const auto ep = server.endpoint();
    auto mux = o.rt->pubsub(ep);
    std::atomic<int> ups{0};
    auto l = mux->listen("m-chan", {.on_message = [](const redcoord::pubsub_message&) {},
                                    .on_link =
                                        [&](bool up) {
                                            if (up) ++ups;
                                        }});
    ASSERT_TRUE(metrics_test::eventually([&] { return mux->connected(); }));
    server.kill();
    ASSERT_TRUE(metrics_test::eventually(
        [&] { return !o.sink->with_message("pub/sub link down").empty(); }));
    server.restart();
    ASSERT_TRUE(metrics_test::eventually(
        [&] { return !o.sink->with_message("pub/sub link up again").empty(); }, 20s));
    EXPECT_EQ(
        o.value("redcoord_reconnects_total{endpoint=\"" + ep.to_string() + "\",link=\"pubsub\"}"),
        1);
    const auto down = o.sink->with_message("pub/sub link down");
    ASSERT_EQ(down.size(), 1u);
    EXPECT_EQ(down[0].component, "signaling");
    EXPECT_EQ(down[0].fields.at("endpoint"), ep.to_string());
    EXPECT_EQ(down[0].fields.at("role"), "master");
}

}  // namespace
