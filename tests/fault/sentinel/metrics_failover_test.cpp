// The 'failover followed' log record (issue 20): a pool on a Sentinel endpoint logs one record
// per master switch it follows, with the service and both addresses.
#include "../../integration/metrics_support.hpp"

#include <redcoord/core/pool.hpp>
#include <redcoord/core/sentinel.hpp>
#include <redcoord/testing/local_sentinel.hpp>

#include <gtest/gtest.h>

using namespace std::chrono_literals;
using redcoord::testing::local_sentinel;

TEST(SentinelLog, FailoverFollowedIsLogged) {
    local_sentinel svc;
    metrics_test::observed_runtime o;
    redcoord::connection_pool pool(svc.endpoint(), {.max_size = 4}, o.rt);
    ASSERT_TRUE(pool.command({"SET", "k", "1"}).is_status("OK"));
    const auto old = svc.failover();
    const auto promoted = svc.wait_switched(old, 20s);
    ASSERT_TRUE(metrics_test::eventually(
        [&] { return !o.sink->with_message("failover followed").empty(); }, 20s));
    const auto r = o.sink->with_message("failover followed").back();
    EXPECT_EQ(r.component, "sentinel");
    EXPECT_EQ(r.level, redcoord::log_level::warning);
    EXPECT_EQ(r.fields.at("service"), svc.endpoint().service);
    EXPECT_EQ(r.fields.at("to"), promoted.host + ":" + std::to_string(promoted.port));
}
