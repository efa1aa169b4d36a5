// lock_options::replicas against a real master + replica: an acquisition counts only once
// the replica acknowledged it (WAIT pipelined with the acquire script).
#include <redcoord/core/errors.hpp>
#include <redcoord/core/replication.hpp>
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

#include <iostream>
#include <memory>
#include <string>
#include <thread>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::local_server;
using redcoord::testing::master_and_replica;
using clock_type = std::chrono::steady_clock;

namespace {

lock_options with_replicas(std::size_t n) {
    lock_options o;
    o.timing.ttl = 10s;
    o.replication.replicas = n;
    o.replication.timeout = 100ms;
    return o;
}

// Mean time of one acquire + release, in microseconds.
double mean_cycle_us(distributed_lock& l, int rounds) {
    const auto t0 = clock_type::now();
    for (int i = 0; i < rounds; ++i) {
        if (!l.try_lock()) return -1;
        l.unlock();
    }
    return std::chrono::duration<double, std::micro>(clock_type::now() - t0).count() / rounds;
}

}  // namespace

TEST(ReplicatedLock, OptionsAreValidated) {
    local_server s;
    connection_pool pool(s.endpoint());
    auto o = with_replicas(1);
    o.replication.timeout = 0ms;
    EXPECT_THROW(distributed_lock(pool, "r", o), invalid_argument);
    o.replication.timeout = -5ms;
    EXPECT_THROW(distributed_lock(pool, "r", o), invalid_argument);
    o.replication.timeout = o.timing.ttl;
    EXPECT_THROW(distributed_lock(pool, "r", o), invalid_argument);
    o.replication.replicas = 0;  // ignored without replicas
    EXPECT_NO_THROW(distributed_lock(pool, "r", o));
}

TEST(ReplicatedLock, AcquiresWhenTheReplicaAcknowledges) {
    master_and_replica s;
    distributed_lock l(s.pool, "res", with_replicas(1));
    auto got = l.acquire(0ms);
    ASSERT_TRUE(got);
    // Acknowledged means the replica already has the key with our token.
    EXPECT_EQ(s.replica->command({"GET", l.key()}).text(), got->token);
    EXPECT_TRUE(l.release());

    // More replicas than exist can never be confirmed.
    distributed_lock two(s.pool, "res", with_replicas(2));
    EXPECT_FALSE(two.try_lock());
    EXPECT_EQ(s.master.command({"EXISTS", two.key()}).integer(), 0);
}

TEST(ReplicatedLock, PausedReplicaMeansNotAcquiredAndNoKeyLeft) {
    master_and_replica s;
    distributed_lock l(s.pool, "res", with_replicas(1));
    s.replica->pause();

    EXPECT_FALSE(l.try_lock());
    EXPECT_FALSE(l.held());
    EXPECT_EQ(s.master.command({"EXISTS", l.key()}).integer(), 0);

    const auto t0 = clock_type::now();
    auto got = l.acquire(400ms);  // retries every replica_timeout, none confirmed
    const auto took = clock_type::now() - t0;
    EXPECT_FALSE(got);
    EXPECT_GE(took, 400ms);
    EXPECT_LT(took, 5s);
    EXPECT_EQ(s.master.command({"EXISTS", l.key()}).integer(), 0);

    // A lock without the option is unaffected by the paused replica.
    distributed_lock plain(s.pool, "other", {.timing = {.ttl = 10s}});
    EXPECT_TRUE(plain.try_lock());
    plain.unlock();

    s.replica->resume();
    auto later = l.acquire(5s);
    ASSERT_TRUE(later);
    EXPECT_EQ(s.master.command({"GET", l.key()}).text(), later->token);
    EXPECT_TRUE(l.release());
}

TEST(ReplicatedLock, ReplicaResumingDuringAWaitLetsTheWaiterIn) {
    master_and_replica s;
    distributed_lock l(s.pool, "res", with_replicas(1));
    s.replica->pause();
    std::thread resumer([&] {
        std::this_thread::sleep_for(300ms);
        s.replica->resume();
    });
    auto got = l.acquire(5s);
    resumer.join();
    ASSERT_TRUE(got);
    EXPECT_TRUE(l.release());
}

// Not an assertion: prints what replicas = 1 costs per acquire + release on loopback.
TEST(ReplicatedLock, ReportsTheCostOfWaitingForOneReplica) {
    master_and_replica s;
    distributed_lock plain(s.pool, "plain", {.timing = {.ttl = 10s}});
    distributed_lock waited(s.pool, "waited", with_replicas(1));
    (void)mean_cycle_us(plain, 50);  // warm up connections and script caches
    (void)mean_cycle_us(waited, 50);
    const double a = mean_cycle_us(plain, 500), b = mean_cycle_us(waited, 500);
    ASSERT_GT(a, 0);
    ASSERT_GT(b, 0);
    std::cout << "[lock/replicas] acquire+release mean: replicas=0 " << a << " us, replicas=1 " << b
              << " us (+" << (b - a) << " us)\n";
}
