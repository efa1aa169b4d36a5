// The election metrics and log records move with leadership (issue 20): the 0/1 leader gauge
// with name and identity labels, the terms counter, and a record per leadership gained/lost.

#include "../metrics_support.hpp"

#include <redcoord/election/leader_elector.hpp>
#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

using namespace std::chrono_literals;
using redcoord::testing::local_server;

namespace {

redcoord::election_options opts(std::string id) {
    redcoord::election_options o;
    o.identity = std::move(id);
    o.term = 1500ms;
    return o;
}

std::string leader_series(const std::string& id) {
    return "redcoord_election_leader{name=\"m-election\",identity=\"" + id + "\"}";
}

TEST(ElectionMetrics, LeaderGaugeTermsAndRecordsFollowLeadership) {
    local_server server;
    metrics_test::observed_runtime o;
    redcoord::connection_pool pool(server.endpoint(), {}, o.rt);
    redcoord::leader_elector a(pool, "m-election", opts("node-a"));
    EXPECT_EQ(o.value(leader_series("node-a")), 0);  // present before any leadership
    a.start();
    ASSERT_TRUE(metrics_test::eventually([&] { return a.is_leader(); }));
    ASSERT_TRUE(
        metrics_test::eventually([&] { return o.value_or_zero(leader_series("node-a")) == 1; }));
    EXPECT_EQ(o.value("redcoord_election_terms_total{name=\"m-election\"}"), 1);

    redcoord::leader_elector b(pool, "m-election", opts("node-b"));
    b.start();
    const auto epoch = a.epoch();
    ASSERT_TRUE(a.resign());
    ASSERT_TRUE(metrics_test::eventually([&] { return b.is_leader(); }));
    ASSERT_TRUE(
        metrics_test::eventually([&] { return o.value_or_zero(leader_series("node-b")) == 1; }));
    EXPECT_EQ(o.value(leader_series("node-a")), 0);
    EXPECT_EQ(o.value("redcoord_election_terms_total{name=\"m-election\"}"), 2);

    const auto gained = o.sink->with_message("leadership gained");
    ASSERT_EQ(gained.size(), 2u);
    EXPECT_EQ(gained[0].component, "election");
    EXPECT_EQ(gained[0].fields.at("identity"), "node-a");
    EXPECT_EQ(gained[0].fields.at("name"), "m-election");
    EXPECT_EQ(gained[0].fields.at("epoch"), std::to_string(epoch));
    EXPECT_EQ(gained[1].fields.at("identity"), "node-b");
    const auto lost = o.sink->with_message("leadership lost");
    ASSERT_EQ(lost.size(), 1u);
    EXPECT_EQ(lost[0].level, redcoord::log_level::warning);
    EXPECT_EQ(lost[0].fields.at("identity"), "node-a");
    EXPECT_FALSE(lost[0].fields.at("reason").empty());

    b.stop();
    EXPECT_TRUE(
        metrics_test::eventually([&] { return o.value_or_zero(leader_series("node-b")) == 0; }));
}

TEST(ElectionMetrics, IdentitiesCanBeDropped) {
    local_server server;
    metrics_test::observed_runtime o;
    redcoord::metrics_options mo;
    mo.identities = false;
    o.rt->set_metrics(o.registry, mo);
    redcoord::connection_pool pool(server.endpoint(), {}, o.rt);
    redcoord::leader_elector a(pool, "m-anon", opts("node-a"));
    a.start();
    ASSERT_TRUE(metrics_test::eventually([&] {
        return o.value_or_zero("redcoord_election_leader{name=\"m-anon\",identity=\"\"}") == 1;
    }));
}

}  // namespace
