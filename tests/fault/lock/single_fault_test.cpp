// distributed_lock under real faults: a killed pub/sub link, a paused and a dead node.
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

#include <future>
#include <thread>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::local_server;
using clock_type = std::chrono::steady_clock;

TEST(LockFault, WaiterStillWakesWhenItsPubSubLinkIsKilledAroundTheRelease) {
    local_server s;
    connection_pool pool(s.endpoint());
    distributed_lock holder(pool, "link", {.timing = {.ttl = 30s}});
    distributed_lock waiter(pool, "link", {.timing = {.ttl = 30s}});
    ASSERT_TRUE(holder.acquire(0ms));
    auto fut = std::async(std::launch::async, [&] { return waiter.acquire(20s); });
    std::this_thread::sleep_for(500ms);  // the waiter is subscribed and sleeping
    // Drop every pub/sub link, then release while the waiter is (probably) reconnecting:
    // the release message may be lost; the resubscription must make the waiter look again.
    (void)s.command({"CLIENT", "KILL", "TYPE", "pubsub"});
    EXPECT_TRUE(holder.release());
    const auto t0 = clock_type::now();
    auto got = fut.get();
    ASSERT_TRUE(got);
    EXPECT_LT(clock_type::now() - t0, 10s);  // far less than the holder's 30 s TTL
    waiter.unlock();
}

TEST(LockFault, PausedNodeGivesATimeoutErrorNotAHang) {
    local_server s;
    auto ep = s.endpoint();
    ep.command_timeout = 200ms;
    ep.connect_timeout = 200ms;
    connection_pool pool(ep);
    distributed_lock a(pool, "paused", {.timing = {.ttl = 5s}});
    ASSERT_TRUE(a.acquire(0ms));
    s.pause();
    auto t0 = clock_type::now();
    // The release was sent but its reply never came: the outcome is unknown.
    EXPECT_THROW((void)a.release(), outcome_unknown);
    EXPECT_LT(clock_type::now() - t0, 2s);
    EXPECT_FALSE(a.held());  // local state is cleared whatever happened
    distributed_lock b(pool, "paused", {.timing = {.ttl = 5s}});
    t0 = clock_type::now();
    EXPECT_THROW((void)b.try_lock(), error);  // no answer: an error, never a silent "false"
    EXPECT_LT(clock_type::now() - t0, 2s);
    s.resume();
}

TEST(LockFault, DeadNodeIsAConnectionErrorAndUnlockNeverThrows) {
    local_server s;
    auto ep = s.endpoint();
    ep.connect_timeout = 200ms;
    connection_pool pool(ep);
    distributed_lock a(pool, "dead", {.timing = {.ttl = 5s}});
    ASSERT_TRUE(a.acquire(0ms));
    s.kill();
    a.unlock();  // swallowed: Lockable::unlock must not throw
    EXPECT_FALSE(a.held());
    EXPECT_THROW((void)a.try_lock(), connection_error);
}
