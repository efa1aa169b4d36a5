// Every primitive on a real Redis Cluster (three masters, a replica each): each runs its
// operations, and so every one of its scripts, under names spread over all three masters. A
// script whose keys left the primitive's hash tag would fail with CROSSSLOT; one routed to
// the wrong master would cost a MOVED (followed, but counted here as a failure to route).
// Unicast, which lists one node's subscribers, is refused with a typed error.

#include "shared_cluster.hpp"

#include <redcoord/core/hash_slot.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/election/leader_elector.hpp>
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
#include <memory>
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

    std::unique_ptr<connection_pool> pool_;
};

}  // namespace

TEST_F(ClusterPrimitives, DistributedLockWithFencingAndPerShardWait) {
    const auto before = redirections();
    for (const auto& n : names("lock-")) {
        lock_options o;
        o.ttl = 2s;
        o.replicas = 1;  // WAIT on the shard's own replica
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
        o.replicas = 1;
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
        o.replicas = 1;
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

TEST_F(ClusterPrimitives, SignalsBroadcastThroughTheClusterBus) {
    signal_hub hub(*pool_);
    for (const auto& n : names("sig-")) {
        auto w = hub.listen({n});
        // Classic pub/sub: delivered through the cluster bus from whichever master publishes;
        // its receiver count is that master's own subscribers only, so it is not asserted.
        (void)hub.broadcast(n, "hello");
        auto s = w.wait(2s);
        ASSERT_TRUE(s) << n;
        EXPECT_EQ(s->payload, "hello");
    }
}

TEST_F(ClusterPrimitives, UnicastIsRefusedWithATypedError) {
    signal_hub hub(*pool_);
    EXPECT_THROW((void)hub.unicast("jobs", "x"), invalid_argument);
    EXPECT_THROW((void)hub.listen_unicast("jobs"), invalid_argument);
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
