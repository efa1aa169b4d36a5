// redcoord_signal_delivery_seconds (issue 20): a signal published by a hub of this host is
// observed once (its first copy), with a plausible publish-to-delivery time; a plain PUBLISH
// (no envelope) is not.

#include "../metrics_support.hpp"

#include <redcoord/signaling/signal_hub.hpp>
#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

using namespace std::chrono_literals;
using redcoord::testing::local_server;

TEST(SignalMetrics, DeliveryTimeOfEnvelopedSignalsFromThisHost) {
    local_server server;
    metrics_test::observed_runtime o;
    redcoord::connection_pool pool(server.endpoint(), {}, o.rt);
    redcoord::signal_hub sender(pool), receiver(pool);
    auto w = receiver.listen({"m-signals"});
    ASSERT_EQ(sender.broadcast("m-signals", "one"), 1u);
    auto got = w.wait(5s);
    ASSERT_TRUE(got);
    EXPECT_EQ(got->payload, "one");
    ASSERT_TRUE(metrics_test::eventually(
        [&] { return o.value_or_zero("redcoord_signal_delivery_seconds_count") == 1; }));
    const double sum = o.value_or_zero("redcoord_signal_delivery_seconds_sum");
    EXPECT_GT(sum, 0);
    EXPECT_LT(sum, 5);

    server.command({"PUBLISH", "m-signals", "plain"});  // no envelope: no send time
    auto plain = w.wait(5s);
    ASSERT_TRUE(plain);
    EXPECT_EQ(o.value("redcoord_signal_delivery_seconds_count"), 1);
}
