// Every primitive on a real Redis Cluster (three masters, a replica each): each runs its
// operations, and so every one of its scripts, under names spread over all three masters. A
// script whose keys left the primitive's hash tag would fail with CROSSSLOT; one routed to
// the wrong master would cost a MOVED (followed, but counted here as a failure to route).
// Signals, lock releases and election hand-offs travel by sharded pub/sub (SSUBSCRIBE on the
// slot's master and its replica, SPUBLISH); pattern listens, which it lacks, are refused.

#include "shared_cluster.hpp"

#include <redcoord/core/cluster.hpp>
#include <redcoord/core/connection.hpp>
#include <redcoord/core/hash_slot.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/election/leader_elector.hpp>
#include <redcoord/jobs/job_queue.hpp>
#include <redcoord/jobs/job_worker.hpp>
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/lock/fair_lock.hpp>
#include <redcoord/queue/list_queue.hpp>
#include <redcoord/queue/reliable_queue.hpp>
#include <redcoord/signaling/barrier.hpp>
#include <redcoord/signaling/double_barrier.hpp>
#include <redcoord/signaling/latch.hpp>
#include <redcoord/signaling/signal_hub.hpp>
#include <redcoord/testing/local_cluster.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <map>
#include <memory>
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

class ClusterPrimitives : public cluster_test::shared_cluster {
protected:
    void SetUp() override {
        shared_cluster::SetUp();
        pool_ = std::make_unique<connection_pool>(parse_endpoint(cluster().url()));
    }

    // One name per master: `base` + a suffix whose hash tag lands on master 0, 1, 2 in turn.
    static std::vector<std::string> names(const std::string& base) {
        return {cluster().key_on(0, base), cluster().key_on(1, base), cluster().key_on(2, base)};
    }

    // MOVED/ASK seen by the masters: every call routed to the right node adds none.
    static long long redirections() {
        long long n = 0;
        for (std::size_t i = 0; i < cluster().size(); ++i) {
            const auto info = cluster().node(i).command({"INFO", "errorstats"}).text();
            for (const char* e : {"errorstat_MOVED:count=", "errorstat_ASK:count="}) {
                const auto at = info.find(e);
                if (at != std::string::npos) n += std::stoll(info.substr(at + std::strlen(e)));
            }
        }
        return n;
    }

    // Sharded subscribers of `channel` on node `i` (PUBSUB SHARDNUMSUB counts its own).
    static long long shard_subscribers(std::size_t i, const std::string& channel) {
        const auto r = cluster().node(i).command({"PUBSUB", "SHARDNUMSUB", channel});
        return r.elements().at(1).integer();
    }

    std::unique_ptr<connection_pool> pool_;
};

}  // namespace

TEST_F(ClusterPrimitives, DistributedLockWithFencingAndPerShardWait) {
    const auto before = redirections();
    for (const auto& n : names("lock-")) {
        lock_options o;
        o.timing.ttl = 2s;
        o.replication.replicas = 1;  // WAIT on the shard's own replica
        distributed_lock a(*pool_, n, o), b(*pool_, n, o);
        auto first = a.acquire(1s);
        ASSERT_TRUE(first) << n;
        EXPECT_FALSE(b.acquire(50ms)) << n;
        EXPECT_TRUE(a.extend(3s));
        EXPECT_TRUE(a.release());
        auto second = b.acquire(1s);
        ASSERT_TRUE(second);
        EXPECT_GT(second->fencing_token, first->fencing_token);
        EXPECT_TRUE(b.release());
    }
    EXPECT_EQ(redirections(), before);
}

TEST_F(ClusterPrimitives, FairLockHandsOverInOrder) {
    for (const auto& n : names("fair-")) {
        fair_lock a(*pool_, n), b(*pool_, n);
        ASSERT_TRUE(a.acquire(1s));
        std::thread t([&] {
            auto got = b.acquire(5s);
            EXPECT_TRUE(got);
            if (got) EXPECT_TRUE(b.release());
        });
        std::this_thread::sleep_for(50ms);
        EXPECT_TRUE(a.release());
        t.join();
    }
}

TEST_F(ClusterPrimitives, ReliableQueueLosesNothingAcrossShards) {
    const auto before = redirections();
    for (const auto& n : names("rq-")) {
        reliable_queue_options o;
        o.replication.replicas = 1;
        reliable_queue q(*pool_, n, o);
        std::vector<std::string> payloads;
        for (int i = 0; i < 20; ++i) payloads.push_back(n + "#" + std::to_string(i));
        ASSERT_EQ(q.push_batch(payloads).size(), 20u);
        EXPECT_EQ(q.size(), 20u);
        auto first = q.pop(1s);
        ASSERT_TRUE(first);
        EXPECT_TRUE(q.nack(*first, nack_action::dead_letter));
        EXPECT_EQ(q.dead_letters().size(), 1u);
        EXPECT_EQ(q.requeue_dead(), 1u);
        std::set<std::string> got;
        while (auto d = q.pop(200ms)) {
            got.insert(d->payload);
            EXPECT_TRUE(q.ack(*d));
        }
        EXPECT_EQ(got.size(), 20u);
        (void)q.recover();
        const auto st = q.stats();
        EXPECT_EQ(st.ready, 0u);
        q.close();
    }
    EXPECT_EQ(redirections(), before);
}

TEST_F(ClusterPrimitives, JobsRunOnTheirQueuesShardWithShardedWakeUps) {
    const auto before = redirections();
    for (const auto& n : names("jobs-")) {
        job_queue q(*pool_, n);
        job_worker w(q, [](job_context& j) { return "ran " + j.payload(); },
                     {.poll_timeout = 10s});  // wake-ups, not polling, must start the jobs
        w.start();
        const auto now = q.add("now");
        const auto later = q.add("later", {.delay = 100ms});
        ASSERT_TRUE(eventually([&] { return q.counts().completed == 2; }, 5s)) << n;
        EXPECT_EQ(q.get(now.id)->result, "ran now");
        EXPECT_EQ(q.get(later.id)->result, "ran later");
        w.stop();
    }
    EXPECT_EQ(redirections(), before);
}

// Flows (issue 37): add_flow's one script, the release inside the settle script and the
// cancel cascade stay in the queue's slot on every master.
TEST_F(ClusterPrimitives, JobFlowsRunInTheirQueuesSlot) {
    const auto before = redirections();
    for (const auto& n : names("flows-")) {
        job_queue q(*pool_, n);
        flow_job root{"root", {.id = "root"}, {}};
        root.children.push_back({"a", {.id = "a"}, {}});
        root.children.push_back({"b", {.id = "b"}, {}});
        ASSERT_EQ(q.add_flow(root).back().state, job_state::waiting_children) << n;
        std::map<std::string, std::string> seen;
        std::mutex mu;
        job_worker w(
            q,
            [&](job_context& j) {
                std::lock_guard lk(mu);
                if (j.id() == "root") seen = j.dependency_results();
                return "r-" + j.id();
            },
            {.poll_timeout = 10s});  // the release's wake-up, not polling, must start the root
        w.start();
        ASSERT_TRUE(eventually([&] { return q.counts().completed == 3; }, 5s)) << n;
        w.stop();
        EXPECT_EQ(seen, (std::map<std::string, std::string>{{"a", "r-a"}, {"b", "r-b"}})) << n;
        (void)q.add("c", {.id = "c"});
        job_options o;
        o.id = "p";
        o.depends_on = {"c"};
        (void)q.add("p", o);
        EXPECT_EQ(q.cancel("p"), job_state::waiting_children);
        EXPECT_EQ(q.get("c")->state, job_state::failed) << n;
        EXPECT_THROW((void)q.add("x", {.depends_on = {"ghost"}}), unknown_dependency);
    }
    EXPECT_EQ(redirections(), before);
}

// Groups, dedupe windows and debounce (issue 37): the group keys share the queue's hash tag,
// so the format 2 add, the group limit, the turns and inspect stay in its slot on every master.
TEST_F(ClusterPrimitives, JobGroupsDedupeAndDebounceRunInTheirQueuesSlot) {
    const auto before = redirections();
    for (const auto& n : names("groups-")) {
        job_queue q(*pool_, n);
        EXPECT_EQ(q.set_group_limit("acme", 1), 0u) << n;
        for (int i = 0; i < 3; ++i) {
            job_options o;
            o.group = i == 2 ? "other" : "acme";
            (void)q.add("g", o);
        }
        job_options d;
        d.id = "bounce";
        d.debounce = 50ms;
        d.dedupe_for = 1ms;
        (void)q.add("v1", d);
        EXPECT_TRUE(q.add("v2", d).debounced) << n;
        job_worker w(q, [](job_context& j) { return "r-" + j.payload(); },
                     {.threads = 4, .poll_timeout = 10s});
        w.start();
        ASSERT_TRUE(eventually([&] { return q.counts().completed == 4; }, 5s)) << n;
        w.stop();
        EXPECT_EQ(q.get("bounce")->result, "r-v2") << n;
        const auto groups = q.groups();
        ASSERT_EQ(groups.size(), 1u) << n;  // "other" is idle and has no limit: forgotten
        EXPECT_EQ(groups[0].name, "acme");
        EXPECT_EQ(groups[0].limit, 1u);
    }
    EXPECT_EQ(redirections(), before);
}

TEST_F(ClusterPrimitives, ListQueueBothOrders) {
    for (const auto& n : names("lq-")) {
        list_queue q(*pool_, n);
        q.push("a");
        q.push("b");
        EXPECT_EQ(q.size(), 2u);
        EXPECT_EQ(q.pop(1s), "a");
        EXPECT_EQ(q.try_pop(), "b");
        EXPECT_FALSE(q.try_pop());
    }
}

TEST_F(ClusterPrimitives, ElectionElectsOneAndHandsOverOnResign) {
    for (const auto& n : names("election-")) {
        election_options o;
        o.term = 1500ms;
        o.replication.replicas = 1;
        o.identity = "a";
        leader_elector a(*pool_, n, o);
        o.identity = "b";
        leader_elector b(*pool_, n, o);
        a.start();
        b.start();
        ASSERT_TRUE(eventually([&] { return a.is_leader() != b.is_leader(); }, 10s));
        auto& leader = a.is_leader() ? a : b;
        auto& other = a.is_leader() ? b : a;
        EXPECT_TRUE(leader.resign());
        EXPECT_TRUE(eventually([&] { return other.is_leader(); }, 10s)) << n;
        a.stop();
        b.stop();
    }
}

TEST_F(ClusterPrimitives, SignalsTravelByShardedPubSubOnTheSlotsMasterAndReplica) {
    signal_hub hub(*pool_);
    std::vector<waiter> ws;
    for (const auto& n : names("sig-")) {
        auto& w = ws.emplace_back(hub.listen({n}));
        // SSUBSCRIBE on the slot's master and on its replica, nowhere else.
        const auto master = *cluster().master_of_key(n);
        const auto replica = cluster().replicas_of(master).at(0);
        EXPECT_TRUE(eventually([&] { return shard_subscribers(replica, n) == 1; }, 5s)) << n;
        EXPECT_EQ(shard_subscribers(master, n), 1) << n;
        EXPECT_EQ(shard_subscribers(cluster().other_master(master), n), 0) << n;
        // SPUBLISH reaches the master's sharded subscriber: one receiver counted there.
        EXPECT_EQ(hub.broadcast(n, "hello"), 1U) << n;
        auto s = w.wait(2s);
        ASSERT_TRUE(s) << n;
        EXPECT_EQ(s->payload, "hello");
        // The replica's copy of the same message is dropped by its envelope id.
        EXPECT_FALSE(w.wait(100ms)) << n;
    }
    // Two links per shard with a channel: the master and its replica.
    EXPECT_TRUE(eventually([&] { return hub.connected_links() == 6; }, 5s))
        << hub.connected_links();
}

TEST_F(ClusterPrimitives, UnicastReachesExactlyOneWaiterOnEveryShard) {
    signal_hub hub(*pool_);
    for (const auto& n : names("uni-")) {
        std::vector<waiter> ws;
        for (int i = 0; i < 3; ++i) ws.push_back(hub.listen_unicast(n));
        for (int round = 0; round < 6; ++round) {
            ASSERT_TRUE(hub.unicast(n, "job " + std::to_string(round))) << n;
            int got = 0;
            ASSERT_TRUE(eventually(
                [&] {
                    for (auto& w : ws) got += w.try_wait() ? 1 : 0;
                    return got >= 1;
                },
                2s))
                << n;
            std::this_thread::sleep_for(50ms);
            for (auto& w : ws) got += w.try_wait() ? 1 : 0;
            EXPECT_EQ(got, 1) << n << " round " << round;
        }
        ws.clear();
        // No waiter left: nobody to take it.
        EXPECT_TRUE(eventually([&] { return !hub.unicast(n, "late"); }, 5s)) << n;
    }
}

TEST_F(ClusterPrimitives, PatternListensAreRefusedWithATypedError) {
    signal_hub hub(*pool_);
    EXPECT_THROW((void)hub.listen_pattern({"jobs.*"}), invalid_argument);
    EXPECT_THROW((void)hub.on_pattern("jobs.*", [](const redcoord::signal&) {}), invalid_argument);
    // The hub still works for channels after the refusal.
    const auto n = cluster().key_on(1, "after-pattern-");
    auto w = hub.listen({n});
    (void)hub.broadcast(n, "ok");
    EXPECT_TRUE(w.wait(2s));
}

TEST_F(ClusterPrimitives, BarriersLatchAndDoubleBarrier) {
    signal_hub hub(*pool_);
    for (const auto& n : names("bar-")) {
        std::vector<std::thread> parties;
        std::atomic<int> released{0};
        for (int i = 0; i < 3; ++i)
            parties.emplace_back([&] {
                barrier b(hub, n, 3);
                (void)b.arrive_and_wait(10s);
                ++released;
            });
        for (auto& t : parties) t.join();
        EXPECT_EQ(released.load(), 3);

        latch l(hub, n + ":latch", 1);
        std::thread opener([&] {
            std::this_thread::sleep_for(20ms);
            (void)l.count_down();
        });
        EXPECT_TRUE(l.wait(5s));
        opener.join();

        std::vector<std::thread> dbl;
        for (int i = 0; i < 2; ++i)
            dbl.emplace_back([&] {
                double_barrier d(hub, n + ":double", 2);
                d.enter(10s);
                d.leave(10s);
            });
        for (auto& t : dbl) t.join();
    }
}

namespace {

// Moves every key of `slot` from the source to the importing node of a migration that
// begin_migration() started, without ending it: the source then answers -ASK for them.
void move_keys_of(local_cluster& cl, std::uint16_t slot, std::size_t from, std::size_t to) {
    const std::string s = std::to_string(slot);
    const auto keys = cl.node(from).command({"CLUSTER", "GETKEYSINSLOT", s, "100"});
    ASSERT_FALSE(keys.elements().empty());
    std::vector<std::string> cmd{
        "MIGRATE", "127.0.0.1", std::to_string(cl.node(to).port()), "", "0", "5000", "KEYS"};
    for (const auto& k : keys.elements()) cmd.push_back(k.text());
    connection c(cl.node(from).endpoint());
    (void)c.command(cmd);
}

// EXISTS of `key` on node `i`, answered even while its slot is being imported there.
long long exists_on(local_cluster& cl, std::size_t i, const std::string& key) {
    connection c(cl.node(i).endpoint());
    return c.pipeline({{"ASKING"}, {"EXISTS", key}}).at(1).integer();
}

// Another client, on a pool of its own, takes the lock `name` at once (and lets it go).
template <class Lock, class Options>
void expect_another_client_takes(local_cluster& cl, const std::string& name, const Options& o) {
    connection_pool other_pool(parse_endpoint(cl.url()));
    Lock b(other_pool, name, o);
    const bool taken = b.try_lock();
    EXPECT_TRUE(taken) << "another client cannot take the lock";
    if (taken) b.unlock();
}

std::string pttl_on(local_cluster& cl, std::size_t i, const std::string& key) {
    connection c(cl.node(i).endpoint());
    return std::to_string(c.pipeline({{"ASKING"}, {"PTTL", key}}).at(1).integer());
}

}  // namespace

// Review 2026-11-28, F6: unlock() sends its release without waiting for the reply. After a
// resharding the old owner answers MOVED, and that reply used to be skipped by whoever read
// the connection next: the key stayed for its whole TTL and the pool kept its stale map.
TEST_F(ClusterPrimitives, F6_UnlockAfterAReshardReleasesOnTheNewOwner) {
    const auto name = cluster().key_on(1, "f6-moved-");
    const auto key = make_key(default_prefix, "lock", name);
    const auto slot = hash_slot(key);
    lock_options o;
    o.timing.ttl = 20s;
    distributed_lock a(*pool_, name, o);
    ASSERT_TRUE(a.try_lock());
    const auto from = cluster().master_of_slot(slot).value();
    const auto to = cluster().other_master(from);
    cluster().migrate_slot(slot, to);
    ASSERT_EQ(exists_on(cluster(), to, key), 1);
    a.unlock();
    EXPECT_TRUE(eventually([&] { return exists_on(cluster(), to, key) == 0; }, 100ms))
        << "the lock key is still on the new owner, PTTL " << pttl_on(cluster(), to, key) << " ms";
    EXPECT_EQ(pool_->slot_map()->master_of(slot)->port, cluster().node(to).port())
        << "the pool did not learn the slot's new owner";
    expect_another_client_takes<distributed_lock>(cluster(), name, o);
    cluster().migrate_slot(slot, from);  // back, for the other tests
}

// The same in the middle of a migration: the lock's keys are already on the importing node,
// so the source answers -ASK, which needs ASKING and the command again on that node.
TEST_F(ClusterPrimitives, F6_UnlockDuringAMigrationReleasesOnTheImportingNode) {
    const auto name = cluster().key_on(2, "f6-ask-");
    const auto key = make_key(default_prefix, "lock", name);
    const auto slot = hash_slot(key);
    lock_options o;
    o.timing.ttl = 20s;
    distributed_lock a(*pool_, name, o);
    ASSERT_TRUE(a.try_lock());
    const auto from = cluster().master_of_slot(slot).value();
    const auto to = cluster().other_master(from);
    cluster().begin_migration(slot, to);
    move_keys_of(cluster(), slot, from, to);
    ASSERT_EQ(exists_on(cluster(), to, key), 1);
    a.unlock();
    EXPECT_TRUE(eventually([&] { return exists_on(cluster(), to, key) == 0; }, 100ms))
        << "the lock key is still on the importing node, PTTL " << pttl_on(cluster(), to, key)
        << " ms";
    // Ended first: while the slot's keys are split between the nodes (the fencing counter
    // moved, the lock key gone), a script naming both is refused with TRYAGAIN.
    cluster().finish_migration(slot);
    expect_another_client_takes<distributed_lock>(cluster(), name, o);
    cluster().migrate_slot(slot, from);  // back, for the other tests
}

// fair_lock::unlock() sends its release the same way (two keys of the slot, its lock key and
// its queue).
TEST_F(ClusterPrimitives, F6_FairLockUnlockAfterAReshardReleasesOnTheNewOwner) {
    const auto name = cluster().key_on(0, "f6-fair-");
    const auto key = make_key(default_prefix, "lock", name);
    const auto slot = hash_slot(key);
    fair_lock_options o;
    o.timing.ttl = 20s;
    fair_lock a(*pool_, name, o);
    ASSERT_TRUE(a.try_lock());
    const auto from = cluster().master_of_slot(slot).value();
    const auto to = cluster().other_master(from);
    cluster().migrate_slot(slot, to);
    ASSERT_EQ(exists_on(cluster(), to, key), 1);
    a.unlock();
    EXPECT_TRUE(eventually([&] { return exists_on(cluster(), to, key) == 0; }, 100ms))
        << "the lock key is still on the new owner, PTTL " << pttl_on(cluster(), to, key) << " ms";
    expect_another_client_takes<fair_lock>(cluster(), name, o);
    cluster().migrate_slot(slot, from);  // back, for the other tests
}
