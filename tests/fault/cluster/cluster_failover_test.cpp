// Primitives through a `redis-cluster://` pool across the cluster's own faults (issue 19): the
// master of their slot SIGKILLed (its replica promoted by the cluster) under a lock, a queue,
// an election and a signal waiter; a manual failover; a slot migrated while a reliable queue
// and a barrier use it; a paused master.

#include <redcoord/core/cluster.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/hash_slot.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/election/leader_elector.hpp>
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/queue/reliable_queue.hpp>
#include <redcoord/signaling/barrier.hpp>
#include <redcoord/signaling/signal_hub.hpp>
#include <redcoord/testing/local_cluster.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::eventually;
using redcoord::testing::local_cluster;

namespace {

// Acquire then release within `within`, riding out errors (a failover in progress).
bool lock_works(distributed_lock& l, std::chrono::milliseconds within) {
    return eventually(
        [&] {
            try {
                if (!l.acquire(0ms)) return false;
                l.release();
                return true;
            } catch (const error&) {
                return false;
            }
        },
        within, 20ms);
}

}  // namespace

TEST(ClusterFailover, KilledMastersReplicaTakesOverWithNothingAckedLost) {
    local_cluster c;
    connection_pool pool(parse_endpoint(c.url()));
    const auto lock_name = c.key_on(0, "lock-");
    const auto queue_name = c.key_on(0, "queue-");
    // No WAIT here: once its master is dead the shard has no replica left to acknowledge.
    distributed_lock l(pool, lock_name, {.timing = {.ttl = 2s}});
    reliable_queue_options qo;
    qo.replication.replicas = 1;  // an acknowledged push is on the shard's replica
    reliable_queue q(pool, queue_name, qo);
    std::vector<std::string> pushed;
    for (int i = 0; i < 50; ++i) pushed.push_back("m" + std::to_string(i));
    ASSERT_EQ(q.push_batch(pushed).size(), 50u);
    ASSERT_TRUE(lock_works(l, 2s));

    c.node(0).kill();
    const auto promoted = c.wait_promoted(0);
    EXPECT_TRUE(c.is_master(promoted));
    EXPECT_TRUE(lock_works(l, 10s));
    std::set<std::string> got;
    ASSERT_TRUE(eventually(
        [&] {
            try {
                while (auto d = q.pop(100ms)) {
                    got.insert(d->payload);
                    (void)q.ack(*d);
                }
            } catch (const error&) {}
            return got.size() == pushed.size();
        },
        15s, 20ms));
    EXPECT_EQ(pool.slot_map()->master_of(hash_slot(lock_name))->port, c.node(promoted).port());
}

TEST(ClusterFailover, ManualFailoverIsFollowedWithoutAFailedCall) {
    local_cluster c;
    connection_pool pool(parse_endpoint(c.url()));
    const auto name = c.key_on(1, "manual-");
    distributed_lock l(pool, name, {.timing = {.ttl = 2s}});
    ASSERT_TRUE(lock_works(l, 2s));
    const auto replicas = c.replicas_of(1);
    ASSERT_FALSE(replicas.empty());
    c.failover(replicas.front());
    // The old master is a replica now and answers MOVED: followed within the same call.
    auto got = l.acquire(0ms);
    ASSERT_TRUE(got);
    EXPECT_TRUE(l.release());
    EXPECT_EQ(pool.slot_map()->master_of(hash_slot(name))->port, c.node(replicas.front()).port());
}

TEST(ClusterFailover, SlotMigratedWhileAQueueAndABarrierUseIt) {
    local_cluster c;
    connection_pool pool(parse_endpoint(c.url()));
    // One hash tag for both, so one slot holds the queue's and the barrier's keys.
    const auto tag = c.key_on(2, "mig-");
    const auto slot = hash_slot(tag);
    reliable_queue q(pool, tag);
    std::vector<std::string> pushed;
    for (int i = 0; i < 300; ++i) pushed.push_back("job" + std::to_string(i));
    ASSERT_EQ(q.push_batch(pushed).size(), 300u);

    std::atomic<bool> done{false};
    std::set<std::string> acked;
    std::atomic<int> errors{0};
    std::thread consumer([&] {
        while (!done.load() || acked.size() < pushed.size()) {
            try {
                auto d = q.pop(50ms);
                if (!d) {
                    if (done.load()) break;
                    continue;
                }
                if (q.ack(*d)) acked.insert(d->payload);
            } catch (const error&) {
                ++errors;  // a reply lost mid-migration: recovery returns the message
                std::this_thread::sleep_for(10ms);
            }
        }
    });
    signal_hub hub(pool);
    std::atomic<int> passed{0};
    std::mutex why_mu;
    std::set<std::string> why;  // the barrier errors retried
    std::vector<std::thread> parties;
    const auto to = c.master_of_slot(static_cast<std::uint16_t>((slot + 8000) % cluster_slots));
    ASSERT_TRUE(to && *to != 2);
    c.begin_migration(slot, *to);
    for (int i = 0; i < 3; ++i)
        parties.emplace_back([&] {
            // The barrier's contract: an error is the caller's to retry, and the retry resumes
            // the same arrival (never counted twice). Multi-key scripts meet TRYAGAIN while
            // the slot's keys are split between the two nodes.
            barrier b(hub, tag, 3);
            const auto until = std::chrono::steady_clock::now() + 20s;
            while (std::chrono::steady_clock::now() < until) {
                try {
                    (void)b.arrive_and_wait(20s);
                    ++passed;
                    return;
                } catch (const error& e) {
                    std::lock_guard g(why_mu);
                    why.insert(e.what());
                }
            }
        });
    std::this_thread::sleep_for(100ms);
    c.finish_migration(slot);
    for (auto& t : parties) t.join();
    done = true;
    consumer.join();
    EXPECT_EQ(passed.load(), 3);
    for (const auto& w : why) std::fprintf(stderr, "barrier retried after: %s\n", w.c_str());
    (void)q.recover();
    while (auto d = q.pop(100ms))
        if (q.ack(*d)) acked.insert(d->payload);
    EXPECT_EQ(acked.size(), pushed.size()) << errors.load() << " errors during the migration";
    EXPECT_EQ(pool.slot_map()->master_of(slot)->port, c.node(*to).port());
}

TEST(ClusterFailover, PausedMasterCostsTimeoutsThenServesAgain) {
    local_cluster c;
    auto ep = parse_endpoint(c.url());
    ep.command_timeout = 300ms;
    connection_pool pool(ep);
    const auto name = c.key_on(2, "paused-");
    distributed_lock l(pool, name, {.timing = {.ttl = 2s}});
    ASSERT_TRUE(lock_works(l, 2s));
    c.node(2).pause();
    const auto start = std::chrono::steady_clock::now();
    bool got = false;
    try {
        got = l.acquire(0ms).has_value();  // not acquired, or a typed error
    } catch (const error&) {}
    EXPECT_FALSE(got);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);  // bounded by the command timeout
    c.node(2).resume();
    EXPECT_TRUE(lock_works(l, 10s));
}

TEST(ClusterFailover, KilledMasterKeepsOneLeaderAndEpochsRising) {
    using clock = std::chrono::steady_clock;
    local_cluster c;
    connection_pool pool(parse_endpoint(c.url()));
    const auto name = c.key_on(0, "election-");
    struct turn {
        std::string who;
        clock::time_point from, to = clock::time_point::max();
        std::uint64_t epoch = 0;
    };
    std::mutex mu;
    std::vector<turn> turns;
    std::vector<std::unique_ptr<leader_elector>> electors;
    std::vector<boost::signals2::scoped_connection> slots;
    for (const char* id : {"a", "b", "c"}) {
        election_options o;
        o.identity = id;
        o.term = 1500ms;
        electors.push_back(std::make_unique<leader_elector>(pool, name, o));
        slots.push_back(electors.back()->on_elected([&, who = std::string(id)](std::uint64_t e) {
            std::lock_guard g(mu);
            turns.push_back({who, clock::now(), clock::time_point::max(), e});
        }));
        slots.push_back(electors.back()->on_revoked([&, who = std::string(id)](revoke_reason) {
            std::lock_guard g(mu);
            for (auto& t : turns)
                if (t.who == who && t.to == clock::time_point::max()) t.to = clock::now();
        }));
        electors.back()->start();
    }
    const auto leads = [&] {
        return std::count_if(electors.begin(), electors.end(),
                             [](const auto& e) { return e->is_leader(); });
    };
    ASSERT_TRUE(eventually([&] { return leads() == 1; }, 10s));
    const auto killed = clock::now();
    c.node(0).kill();
    (void)c.wait_promoted(0);
    // A leader again, by a round sent after the death.
    EXPECT_TRUE(eventually(
        [&] {
            for (const auto& e : electors)
                if (e->is_leader() && e->deadline() && *e->deadline() > killed + 1500ms)
                    return true;
            return false;
        },
        15s));
    for (auto& e : electors) e->stop();
    std::lock_guard g(mu);
    ASSERT_FALSE(turns.empty());
    for (std::size_t i = 0; i < turns.size(); ++i)
        for (std::size_t j = i + 1; j < turns.size(); ++j) {
            const auto& x = turns[i];
            const auto& y = turns[j];
            if (x.who == y.who) continue;
            EXPECT_TRUE(x.to <= y.from || y.to <= x.from)
                << x.who << " and " << y.who << " led at once";
        }
    for (std::size_t i = 1; i < turns.size(); ++i)
        if (turns[i].who != turns[i - 1].who) EXPECT_GT(turns[i].epoch, turns[i - 1].epoch);
}

TEST(ClusterFailover, SignalsReachTheWaiterThroughTheReplicaWhenItsShardsMasterDies) {
    local_cluster c;
    connection_pool pool(parse_endpoint(c.url()));
    signal_hub hub(pool);
    const auto news = c.key_on(0, "news-");
    auto w = hub.listen({news});  // SSUBSCRIBE on master 0 and on its replica
    ASSERT_TRUE(eventually([&] { return hub.connected_links() == 2; }, 5s));
    ASSERT_EQ(hub.broadcast(news, "before"), 1U);
    ASSERT_TRUE(w.wait(2s));
    c.node(0).kill();
    (void)c.wait_promoted(0);
    // The promoted replica kept its sharded subscribers: the first broadcast the new master
    // accepts reaches the waiter, whether or not the hub has re-homed the channel yet.
    std::size_t receivers = 0;
    ASSERT_TRUE(eventually(
        [&] {
            try {
                receivers = hub.broadcast(news, "after");
                return true;
            } catch (const error&) {
                return false;
            }
        },
        15s));
    EXPECT_GE(receivers, 1U);
    auto s = w.wait(2s);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->payload, "after");
    // Then the channel's group follows the new master (the dead one's links are closed).
    EXPECT_TRUE(eventually([&] { return hub.connected_links() == 1; }, 10s))
        << hub.connected_links();
}

TEST(ClusterFailover, AWaitersChannelFollowsItsSlotsMigration) {
    local_cluster c;
    connection_pool pool(parse_endpoint(c.url()));
    signal_hub hub(pool);
    const auto chan = c.key_on(0, "moving-");
    auto w = hub.listen({chan});
    ASSERT_EQ(hub.broadcast(chan, "before"), 1U);
    ASSERT_TRUE(w.wait(2s));
    const auto to = c.other_master(0);
    c.migrate_slot(hash_slot(chan), to);
    // Node 0 drops the subscription itself; the hub asks for the map and subscribes on the
    // new owner and its replica, without the waiter doing anything.
    const auto on = [&](std::size_t node) {
        return c.node(node).command({"PUBSUB", "SHARDNUMSUB", chan}).elements().at(1).integer();
    };
    ASSERT_TRUE(eventually([&] { return on(to) == 1; }, 10s));
    EXPECT_EQ(on(0), 0);
    EXPECT_EQ(hub.broadcast(chan, "after"), 1U);
    auto s = w.wait(2s);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->payload, "after");
}

TEST(ClusterFailover, ALockAcknowledgedByTheShardsReplicaSurvivesItsMastersDeath) {
    local_cluster c;
    connection_pool pool(parse_endpoint(c.url()));
    const auto name = c.key_on(0, "wait-");
    // WAIT on the shard's replica: granted only once the replica has the key, so the replica
    // the cluster promotes still holds it (the failover race of the Redlock page, closed).
    distributed_lock holder(pool, name, {.timing = {.ttl = 20s}, .replication = {.replicas = 1}});
    auto held = holder.acquire(2s);
    ASSERT_TRUE(held);
    c.node(0).kill();  // at once: no time for anything but what WAIT already ensured
    const auto promoted = c.wait_promoted(0);
    distributed_lock rival(pool, name, {.timing = {.ttl = 2s}});
    bool answered = false;
    ASSERT_TRUE(eventually(
        [&] {
            try {
                EXPECT_FALSE(rival.acquire(0ms)) << "the promoted replica lost the lock";
                answered = true;
            } catch (const error&) {}
            return answered;
        },
        10s));
    const std::string key = std::string(default_prefix) + "lock:{" + name + "}";
    EXPECT_EQ(c.node(promoted).command({"EXISTS", key}).integer(), 1);
    EXPECT_TRUE(holder.release());
}
