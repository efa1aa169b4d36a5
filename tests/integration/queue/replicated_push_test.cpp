// reliable_queue_options::replication against a real master + replica: a push returns only once
// the replica acknowledged it, else it throws replication_timeout (the master has it).
#include <redcoord/core/errors.hpp>
#include <redcoord/core/replication.hpp>
#include <redcoord/queue/reliable_queue.hpp>
#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <thread>

using namespace redcoord;
using namespace std::chrono_literals;
using redcoord::testing::local_server;
using redcoord::testing::master_and_replica;

namespace {

reliable_queue_options waited(std::size_t n) {
    reliable_queue_options o;
    o.replication.replicas = n;
    o.replication.timeout = 100ms;
    return o;
}

}  // namespace

TEST(ReplicatedPush, OptionsAreValidated) {
    local_server s;
    connection_pool pool(s.endpoint());
    auto o = waited(1);
    o.replication.timeout = 0ms;
    EXPECT_THROW(reliable_queue(pool, "q", o), invalid_argument);
    o.replication.replicas = 0;  // ignored without replicas
    EXPECT_NO_THROW(reliable_queue(pool, "q", o));
}

TEST(ReplicatedPush, ReturnsOnceTheReplicaHasIt) {
    master_and_replica s;
    reliable_queue q(s.pool, "jobs", waited(1));
    ASSERT_NO_THROW(q.push("one"));
    const std::vector<std::string> batch{"two", "three"};
    ASSERT_NO_THROW(q.push_batch(batch));
    // Acknowledged means the replica already holds all three.
    EXPECT_EQ(s.replica->command({"LLEN", q.key()}).integer(), 3);
}

TEST(ReplicatedPush, PausedReplicaThrowsReplicationTimeoutResumedPushesAgain) {
    master_and_replica s;
    reliable_queue q(s.pool, "jobs", waited(1));
    s.replica->pause();
    try {
        q.push("maybe");
        ADD_FAILURE() << "no replica acknowledged, push must throw";
    } catch (const replication_timeout& e) {
        EXPECT_EQ(e.acknowledged(), 0u);
        EXPECT_EQ(e.required(), 1u);
    }
    const std::vector<std::string> batch{"b1", "b2"};
    EXPECT_THROW(q.push_batch(batch), timeout_error);  // replication_timeout is a timeout_error
    // Not durable, but the master has them (a retry may duplicate: at-least-once).
    EXPECT_EQ(s.master.command({"LLEN", q.key()}).integer(), 3);

    // A queue handle without the option is unaffected.
    reliable_queue plain(s.pool, "jobs");
    EXPECT_NO_THROW(plain.push("plain"));

    s.replica->resume();
    // The caller's retry: once the replica caught up, a push is confirmed again.
    std::size_t pushes = 1;
    bool confirmed = false;
    for (int i = 0; i < 50 && !confirmed; ++i) {
        try {
            ++pushes;
            q.push("maybe");
            confirmed = true;
        } catch (const replication_timeout&) {}
    }
    ASSERT_TRUE(confirmed) << "no push confirmed after the replica resumed";
    const auto on_master = s.master.command({"LLEN", q.key()}).integer();
    EXPECT_EQ(on_master, static_cast<long long>(pushes + 3));
    EXPECT_EQ(s.replica->command({"LLEN", q.key()}).integer(), on_master);

    // Everything pushed is delivered, the retried message twice.
    reliable_queue consumer(s.pool, "jobs", {.recover_on_start = false});
    std::multiset<std::string> got;
    while (auto d = consumer.pop(100ms)) {
        EXPECT_TRUE(consumer.ack(*d));
        got.insert(d->payload);
    }
    EXPECT_EQ(got.count("maybe"), pushes);
    EXPECT_EQ(got.count("b1"), 1u);
    EXPECT_EQ(got.count("b2"), 1u);
    EXPECT_EQ(got.count("plain"), 1u);
    EXPECT_EQ(got.size(), pushes + 3);
    consumer.close();
}
