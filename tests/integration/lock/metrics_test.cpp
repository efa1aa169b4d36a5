// The lock metrics and log records move when the locks act (issue 20): acquire durations by
// kind and outcome, losses (counted and logged with their fields), Redlock quorum failures.

#include "../metrics_support.hpp"

#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/lock/errors.hpp>
#include <redcoord/lock/fair_lock.hpp>
#include <redcoord/lock/redlock.hpp>
#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

using namespace std::chrono_literals;
using redcoord::testing::local_server;

namespace {

std::string acquire_count(const std::string& kind, const std::string& name,
                          const std::string& outcome) {
    return "redcoord_lock_acquire_seconds_count{kind=\"" + kind + "\",name=\"" + name +
           "\",outcome=\"" + outcome + "\"}";
}

TEST(LockMetrics, AcquireDurationsByKindAndOutcome) {
    local_server server;
    metrics_test::observed_runtime o;
    redcoord::connection_pool pool(server.endpoint(), {}, o.rt);
    redcoord::distributed_lock a(pool, "m-orders"), b(pool, "m-orders");
    ASSERT_TRUE(a.acquire(1s));
    EXPECT_FALSE(b.try_lock());  // held by `a`: the call ends without the lock
    EXPECT_TRUE(a.release());
    EXPECT_EQ(o.value(acquire_count("lock", "m-orders", "acquired")), 1);
    EXPECT_EQ(o.value(acquire_count("lock", "m-orders", "timeout")), 1);
    EXPECT_EQ(o.value(acquire_count("lock", "m-orders", "error")),
              0);  // resolved up front, still 0
    // The duration lands in a bucket: the +Inf bucket holds every call.
    EXPECT_EQ(o.value("redcoord_lock_acquire_seconds_bucket{kind=\"lock\",name=\"m-orders\","
                      "outcome=\"acquired\",le=\"+Inf\"}"),
              1);

    redcoord::fair_lock f(pool, "m-fair");
    ASSERT_TRUE(f.acquire(1s));
    EXPECT_TRUE(f.release());
    EXPECT_EQ(o.value(acquire_count("fair_lock", "m-fair", "acquired")), 1);
}

TEST(LockMetrics, LostLockIsCountedAndLogged) {
    local_server server;
    metrics_test::observed_runtime o;
    redcoord::connection_pool pool(server.endpoint(), {}, o.rt);
    redcoord::lock_options opts;
    opts.timing.ttl = 600ms;
    opts.watchdog = true;
    redcoord::distributed_lock lock(pool, "m-lost", opts);
    ASSERT_TRUE(lock.acquire(1s));
    const auto fence = lock.fencing_token();
    server.command({"DEL", lock.key()});  // behind the holder's back: the next extension is refused
    ASSERT_TRUE(metrics_test::eventually([&] { return lock.lost(); }, 5s));
    ASSERT_TRUE(metrics_test::eventually([&] {
        return o.value_or_zero("redcoord_lock_lost_total{kind=\"lock\",name=\"m-lost\"}") == 1;
    }));
    const auto records = o.sink->with_message("lock lost");
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(records[0].level, redcoord::log_level::warning);
    EXPECT_EQ(records[0].component, "lock");
    EXPECT_EQ(records[0].fields.at("resource"), "m-lost");
    EXPECT_EQ(records[0].fields.at("kind"), "lock");
    EXPECT_EQ(records[0].fields.at("fencing_token"), std::to_string(fence));
    EXPECT_NE(records[0].fields.at("reason").find("extension refused"), std::string::npos)
        << records[0].fields.at("reason");
}

TEST(LockMetrics, RedlockQuorumFailuresAreCounted) {
    auto servers = redcoord::testing::start_masters(3);
    metrics_test::observed_runtime o;
    std::vector<std::unique_ptr<redcoord::connection_pool>> pools;
    std::vector<redcoord::connection_pool*> nodes;
    for (auto& s : servers) {
        pools.push_back(std::make_unique<redcoord::connection_pool>(
            s->endpoint(), redcoord::pool_options{}, o.rt));
        nodes.push_back(pools.back().get());
        (void)pools.back()->command({"PING"});
    }
    redcoord::redlock rl(nodes, "m-quorum");
    ASSERT_TRUE(rl.acquire(1s));
    EXPECT_TRUE(rl.release());
    servers[1]->kill();
    servers[2]->kill();
    EXPECT_THROW((void)rl.try_lock(), redcoord::quorum_unreachable);
    EXPECT_GE(o.value_or_zero("redcoord_redlock_quorum_failures_total{name=\"m-quorum\"}"), 1);
    EXPECT_EQ(o.value(acquire_count("redlock", "m-quorum", "acquired")), 1);
    EXPECT_EQ(o.value(acquire_count("redlock", "m-quorum", "error")), 1);
}

TEST(LockMetrics, ResourceNamesCanBeDropped) {
    local_server server;
    metrics_test::observed_runtime o;
    redcoord::metrics_options mo;
    mo.resource_names = false;
    o.rt->set_metrics(o.registry, mo);
    redcoord::connection_pool pool(server.endpoint(), {}, o.rt);
    redcoord::distributed_lock a(pool, "m-one"), b(pool, "m-two");
    ASSERT_TRUE(a.acquire(1s));
    ASSERT_TRUE(b.acquire(1s));
    EXPECT_EQ(o.value(acquire_count("lock", "", "acquired")), 2);
    EXPECT_EQ(o.registry->prometheus_text().find("m-one"), std::string::npos);
}

TEST(LockMetrics, OffByDefault) {
    local_server server;
    auto rt = redcoord::runtime::create();
    redcoord::connection_pool pool(server.endpoint(), {}, rt);
    redcoord::distributed_lock a(pool, "m-off");
    ASSERT_TRUE(a.acquire(1s));
    EXPECT_EQ(rt->metrics(), nullptr);
}

}  // namespace
