// The CLI on a Redis Cluster URL (issue 19): a lock, a queue round trip and an inspect, each
// under names on different masters, through `--redis redis-cluster://...`.
#include "cli_harness.hpp"

#include <redcoord/testing/local_cluster.hpp>

using namespace cli_test;

namespace {

struct ClusterCli : ::testing::Test {
    // No failover is tested here: a long node timeout keeps a node that a loaded machine
    // (a sanitizer run) starves for a second from being failed and the cluster from going
    // down (seen once under ThreadSanitizer with TLS: CLUSTERDOWN to the CLI's lock).
    // In SetUp(), not SetUpTestSuite(): a suite set-up that fails makes GoogleTest report its
    // tests as skipped, which ctest counts as such (tests/integration/cluster/shared_cluster.hpp).
    void SetUp() override {
        if (!cluster)
            cluster =
                new redcoord::testing::local_cluster({.node_timeout = std::chrono::seconds(10)});
    }
    static void TearDownTestSuite() {
        delete cluster;
        cluster = nullptr;
    }
    static redcoord::testing::local_cluster* cluster;
    temp_dir dir;
};
redcoord::testing::local_cluster* ClusterCli::cluster = nullptr;

}  // namespace

TEST_F(ClusterCli, LockQueueAndInspectThroughAClusterUrl) {
    const auto url = cluster->url();
    for (const std::string name : {"alpha", "bravo", "charlie", "delta"}) {
        auto lock = run(dir, {"--redis", url, "lock", name, "--ttl", "5s", "--", "true"});
        EXPECT_EQ(lock.status, 0) << lock.output;
        auto push = run(dir, {"--redis", url, "queue", "push", name, "job"});
        ASSERT_EQ(push.status, 0) << push.output;
        auto pop = run(dir, {"--redis", url, "queue", "pop", name, "--consumer", "w"});
        ASSERT_EQ(pop.status, 0) << pop.output;
        const auto delivery = pop.output.substr(0, pop.output.find(' '));
        EXPECT_EQ(run(dir, {"--redis", url, "queue", "ack", name, delivery}).status, 0);
        auto inspect = run(dir, {"--redis", url, "--json", "inspect", "queue", name});
        EXPECT_EQ(inspect.status, 0) << inspect.output;
        EXPECT_TRUE(contains(inspect.output, "\"ready\":0")) << inspect.output;
    }
}

TEST_F(ClusterCli, AClusterUrlOnAPlainServerIsAUsageError) {
    redcoord::testing::local_server plain;
    // The server's own URL (rediss:// with its CA under REDCOORD_TEST_TLS=1) as a cluster URL.
    auto url = plain.url();
    url.insert(url.find("://"), "-cluster");
    auto r = run(dir, {"--redis", url, "queue", "push", "q", "x"});
    EXPECT_NE(r.status, 0);
    EXPECT_TRUE(contains(r.output, "not a cluster node")) << r.output;
}
