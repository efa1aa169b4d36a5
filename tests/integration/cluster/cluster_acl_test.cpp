// A least-privilege user on a Redis Cluster: one made from cluster_acl_needs() of every part's
// needs, created on every node (ACL users are not replicated), routes by the slot map and runs
// locks with waiters (SPUBLISH in the release script, SSUBSCRIBE), an election's hand-off,
// signals and unicast, the reliable queue, and jobs with sharded wake-ups and events. The same
// user without the part's plain needs' sharded forms is refused with permission_error.

#include "shared_cluster.hpp"

#include <redcoord/core/acl.hpp>
#include <redcoord/core/connection.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/election/acl.hpp>
#include <redcoord/election/leader_elector.hpp>
#include <redcoord/jobs/acl.hpp>
#include <redcoord/jobs/job_events.hpp>
#include <redcoord/jobs/job_queue.hpp>
#include <redcoord/jobs/job_worker.hpp>
#include <redcoord/lock/acl.hpp>
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/queue/acl.hpp>
#include <redcoord/queue/reliable_queue.hpp>
#include <redcoord/signaling/acl.hpp>
#include <redcoord/signaling/signal_hub.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <string>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::eventually;

namespace {

constexpr const char* password = "cluster-acl-password";

acl_needs every_part() {
    acl_needs n;
    n.merge(lock_acl_needs())
        .merge(election_acl_needs())
        .merge(signaling_acl_needs(default_prefix, {"acl-*"}))  // the tests' broadcast channels
        .merge(queue_acl_needs())
        .merge(jobs_acl_needs());
    return n;
}

class ClusterAcl : public cluster_test::shared_cluster {
protected:
    // Creates `user` with exactly `needs` on every node; the cluster endpoint logging in as it.
    static endpoint user_endpoint(const std::string& user, const acl_needs& needs) {
        auto argv = acl_setuser_argv(user, needs);
        argv.push_back(std::string(">") + password);
        for (std::size_t i = 0; i < cluster().size(); ++i) {
            connection admin(cluster().node(i).endpoint());
            (void)admin.command(argv);
        }
        auto ep = parse_endpoint(cluster().url());
        ep.user = user;
        ep.password = password;
        return ep;
    }
};

}  // namespace

TEST_F(ClusterAcl, EveryPartRunsAsAUserWithExactlyItsClusterRules) {
    connection_pool pool(user_endpoint("cluster_all", cluster_acl_needs(every_part())));
    const auto name = cluster().key_on(1, "acl-");

    // A lock's waiter wakes on the release's SPUBLISH.
    distributed_lock a(pool, name), b(pool, name);
    auto held = a.acquire(1s);
    ASSERT_TRUE(held);
    auto waiting = std::async(std::launch::async, [&] { return b.acquire(5s).has_value(); });
    std::this_thread::sleep_for(100ms);
    EXPECT_TRUE(a.release());
    EXPECT_TRUE(waiting.get());
    EXPECT_TRUE(b.release());

    // An election hands over on resign (SPUBLISH in the script, SSUBSCRIBE on the follower).
    election_options eo;
    eo.term = 1500ms;
    eo.identity = "x";
    leader_elector x(pool, name, eo);
    eo.identity = "y";
    leader_elector y(pool, name, eo);
    x.start();
    y.start();
    ASSERT_TRUE(eventually([&] { return x.is_leader() != y.is_leader(); }, 10s));
    auto& leader = x.is_leader() ? x : y;
    auto& other = x.is_leader() ? y : x;
    EXPECT_TRUE(leader.resign());
    EXPECT_TRUE(eventually([&] { return other.is_leader(); }, 5s));
    EXPECT_FALSE(x.last_error());
    EXPECT_FALSE(y.last_error());
    x.stop();
    y.stop();

    // Signals and unicast (PUBSUB SHARDCHANNELS on the slot's shard).
    signal_hub hub(pool);
    auto w = hub.listen({name});
    EXPECT_EQ(hub.broadcast(name, "hello"), 1U);
    auto s = w.wait(2s);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->payload, "hello");
    auto u = hub.listen_unicast(name);
    EXPECT_TRUE(hub.unicast(name, "one"));
    EXPECT_TRUE(u.wait(2s));

    // The reliable queue: no pub/sub, only routing.
    reliable_queue q(pool, name);
    (void)q.push("m");
    auto d = q.pop(1s);
    ASSERT_TRUE(d);
    EXPECT_TRUE(q.ack(*d));
    q.close();

    // Jobs: sharded wake-ups start them, events arrive.
    job_queue jq(pool, name);
    job_events events(jq, hub);
    std::atomic<int> heard{0};
    auto slot = events.on([&](const job_event&) { ++heard; });
    job_worker worker(jq, [](job_context&) { return std::string("ok"); }, {.poll_timeout = 10s});
    worker.start();
    (void)jq.add("j");
    EXPECT_TRUE(eventually([&] { return jq.counts().completed == 1; }, 5s));
    EXPECT_TRUE(eventually([&] { return heard.load() > 0; }, 5s));
    worker.stop();
    EXPECT_FALSE(worker.last_error());
}

// Without the sharded commands (the standalone rules alone) the cluster refuses the parts that
// publish or listen, with a typed error naming the command.
TEST_F(ClusterAcl, StandaloneRulesAreRefusedOnAClusterWithATypedError) {
    auto needs = cluster_acl_needs(every_part());
    for (const char* sharded : {"ssubscribe", "spublish"}) {
        SCOPED_TRACE(sharded);
        auto without = needs;
        std::erase(without.commands, std::string(sharded));
        connection_pool pool(user_endpoint(std::string("cluster_no_") + sharded, without));
        const auto name = cluster().key_on(2, std::string("acl-") + sharded);
        signal_hub hub(pool);
        try {
            if (std::string(sharded) == "ssubscribe") {
                auto w = hub.listen({name});
                (void)w.wait(1s);
            } else {
                (void)hub.broadcast(name, "x");
            }
            ADD_FAILURE() << "no permission_error";
        } catch (const permission_error& e) {
            EXPECT_EQ(e.command(), sharded) << e.what();
        }
    }
}
