// The limiters, the semaphore and the rw_lock on a real three-master Redis Cluster: each name's keys in one slot (a script
// whose keys left the name's hash tag would fail with CROSSSLOT), on every master.

#include "shared_cluster.hpp"

#include <redcoord/core/hash_slot.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/limit/rate_limiter.hpp>
#include <redcoord/limit/rw_lock.hpp>
#include <redcoord/limit/semaphore.hpp>
#include <redcoord/limit/sliding_window_limiter.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <future>
#include <thread>

using namespace std::chrono_literals;
using namespace redcoord;

namespace {

class LimitCluster : public cluster_test::shared_cluster {
protected:
    void SetUp() override {
        shared_cluster::SetUp();
        pool_ = std::make_unique<connection_pool>(parse_endpoint(cluster().url()));
    }
    static std::vector<std::string> names(const std::string& base) {
        return {cluster().key_on(0, base), cluster().key_on(1, base), cluster().key_on(2, base)};
    }
    std::unique_ptr<connection_pool> pool_;
};

}  // namespace

TEST_F(LimitCluster, RateLimiterOnEveryMaster) {
    for (const auto& n : names("rate-")) {
        rate_limiter l(*pool_, n, {.rate = 1, .period = 60s, .burst = 2});
        EXPECT_TRUE(l.try_acquire(2).allowed) << n;
        const auto refused = l.try_acquire();
        EXPECT_FALSE(refused.allowed) << n;
        EXPECT_GT(refused.retry_after, 50s);
        const auto key = make_key(default_prefix, "rate", n);
        EXPECT_EQ(cluster().master_of_key(key), cluster().master_of_key(n)) << n;
    }
}

TEST_F(LimitCluster, SlidingWindowOnEveryMaster) {
    for (const auto& n : names("window-")) {
        sliding_window_limiter l(*pool_, n, {.limit = 3, .window = 60s});
        EXPECT_TRUE(l.try_acquire(2).allowed) << n;
        EXPECT_TRUE(l.try_acquire().allowed) << n;
        EXPECT_FALSE(l.try_acquire().allowed) << n;
        EXPECT_EQ(hash_slot(make_key(default_prefix, "window", n)),
                  hash_slot(make_key(default_prefix, "window", n, "seq")));
    }
}

TEST_F(LimitCluster, SemaphoreOnEveryMasterWithShardedReleaseWakeUps) {
    for (const auto& n : names("sem-")) {
        semaphore sem(*pool_, n, {.permits = 2, .timing = {.ttl = 60s}});
        auto a = sem.try_acquire(2);
        ASSERT_TRUE(a) << n;
        EXPECT_FALSE(sem.try_acquire()) << n;
        const auto first = a->fencing_token();
        // The waiter listens on the name's shard; a release there wakes it long before the
        // 60 s leases would end.
        auto waiter = std::async(std::launch::async, [&] { return sem.try_acquire_for(1, 30s); });
        std::this_thread::sleep_for(200ms);
        EXPECT_TRUE(a->release()) << n;
        auto got = waiter.get();
        ASSERT_TRUE(got) << n;
        EXPECT_TRUE(got->extend()) << n;
        EXPECT_GT(got->fencing_token(), first) << n;
    }
}

TEST_F(LimitCluster, RwLockOnEveryMasterWithShardedReleaseWakeUps) {
    for (const auto& n : names("rw-")) {
        rw_lock reader(*pool_, n, {.timing = {.ttl = 60s}}),
            writer(*pool_, n, {.timing = {.ttl = 60s}});
        ASSERT_TRUE(reader.try_lock_shared()) << n;
        const auto first = reader.shared_fencing_token();
        // The writer's intent and wake-up live in the name's slot; the release there wakes it
        // long before the 60 s lease would end, and the withdrawn intent lets readers in again.
        auto w = std::async(std::launch::async, [&] { return writer.try_lock_for(30s); });
        const auto intents = make_key(default_prefix, "rwlock", n, "writers");
        ASSERT_TRUE(redcoord::testing::eventually([&] {
            return pool_->command({"ZCARD", intents}).integer() == 1;
        })) << n;
        EXPECT_FALSE(reader.try_lock_shared()) << n;  // the waiting writer's intent
        reader.unlock_shared();
        ASSERT_TRUE(w.get()) << n;
        EXPECT_TRUE(writer.extend()) << n;
        EXPECT_GT(writer.fencing_token(), first) << n;
        writer.unlock();
        EXPECT_TRUE(reader.try_lock_shared()) << n;
        reader.unlock_shared();
    }
}
