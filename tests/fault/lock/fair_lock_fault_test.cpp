// fair_lock under real faults: a SIGKILLed queued waiter, a SIGKILLed holder, a server restart
// and a paused server during a wait.
#include <redcoord/lock/fair_lock.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/process.hpp>

#include <gtest/gtest.h>

#include <future>
#include <thread>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::local_server;
using redcoord::testing::process;
using clock_type = std::chrono::steady_clock;

namespace {

template <class Pred>
bool eventually(Pred p, std::chrono::milliseconds within = 10s) {
    const auto until = clock_type::now() + within;
    while (clock_type::now() < until) {
        if (p()) return true;
        std::this_thread::sleep_for(2ms);
    }
    return p();
}

// fair_lock_child: lock(), RPUSH order:<resource> tag, hold, release.
process child(const local_server& s, const std::string& resource, const std::string& tag,
              std::chrono::milliseconds lease, std::chrono::milliseconds hold,
              std::chrono::milliseconds ttl) {
    return process({FAIR_CHILD_PATH, std::to_string(s.port()), resource, tag,
                    std::to_string(lease.count()), std::to_string(hold.count()),
                    std::to_string(ttl.count())});
}

long long llen(const local_server& s, const std::string& key) {
    return s.command({"LLEN", key}).integer();
}

std::chrono::milliseconds milliseconds_of(long long ms) { return std::chrono::milliseconds(ms); }

}  // namespace

TEST(FairLockFault, KilledQueuedWaiterDelaysTheQueueByAtMostItsLease) {
    local_server s;
    connection_pool pool(s.endpoint());
    fair_lock holder(pool, "dead-waiter", {.timing = {.ttl = 30s}});
    ASSERT_TRUE(holder.acquire(0ms));
    const std::string queue = holder.key() + ":queue";
    constexpr auto lease = 1000ms;
    auto doomed = child(s, "dead-waiter", "doomed", lease, 0ms, 30000ms);
    ASSERT_TRUE(eventually([&] { return llen(s, queue) == 1; })) << "the child did not queue";
    fair_lock next(pool, "dead-waiter", {.timing = {.ttl = 30s}, .waiter_lease = lease});
    auto got = std::async(std::launch::async, [&] { return next.acquire(20s); });
    ASSERT_TRUE(eventually([&] { return llen(s, queue) == 2; }));
    const auto doomed_id = s.command({"LINDEX", queue, "0"}).text();
    doomed.kill();  // SIGKILL: the head of the queue is dead, its lease still runs
    const auto killed = clock_type::now();
    const auto lease_left =
        milliseconds_of(s.command({"PTTL", holder.key() + ":waiter:" + doomed_id}).integer());
    EXPECT_LE(lease_left, lease);
    EXPECT_TRUE(holder.release());  // hands off to the dead head: nobody answers
    ASSERT_EQ(got.wait_for(15s), std::future_status::ready);
    const auto took = clock_type::now() - killed;
    ASSERT_TRUE(got.get());
    // Skipped once its lease ran out, not before...
    EXPECT_GE(took, lease_left - 20ms);
    // ...and not much later: the next one woke at that lease's end (at most a lease after the kill).
    EXPECT_LE(took, lease_left + 400ms);
    EXPECT_TRUE(s.command({"LRANGE", queue, "0", "-1"}).elements().empty());
    EXPECT_TRUE(next.release());
    EXPECT_TRUE(s.command({"LRANGE", "order:dead-waiter", "0", "-1"}).elements().empty());
}

TEST(FairLockFault, KilledHolderIsFollowedByTheHeadAfterItsTtl) {
    local_server s;
    connection_pool pool(s.endpoint());
    constexpr auto ttl = 1000ms;
    auto holder = child(s, "dead-holder", "holder", 1000ms, 60000ms, ttl);
    ASSERT_TRUE(eventually([&] { return llen(s, "order:dead-holder") == 1; }))
        << "the child did not lock";
    fair_lock next(pool, "dead-holder", {.timing = {.ttl = 30s}});
    auto got = std::async(std::launch::async, [&] { return next.acquire(20s); });
    ASSERT_TRUE(eventually([&] { return llen(s, next.key() + ":queue") == 1; }));
    holder.kill();
    const auto expires =
        clock_type::now() + milliseconds_of(s.command({"PTTL", next.key()}).integer());
    ASSERT_EQ(got.wait_for(15s), std::future_status::ready);
    ASSERT_TRUE(got.get());
    const auto at = clock_type::now();
    EXPECT_GE(at, expires - 20ms);   // not before the holder's key expired
    EXPECT_LE(at, expires + 400ms);  // the head woke at the holder's PTTL, not at a refresh later
    EXPECT_TRUE(next.release());
}

TEST(FairLockFault, ServerRestartMidWaitNothingHangsAndTheWaiterGetsTheLock) {
    local_server s;
    auto ep = s.endpoint();
    ep.connect_timeout = 200ms;
    ep.command_timeout = 300ms;
    connection_pool pool(ep);
    fair_lock holder(pool, "restart", {.timing = {.ttl = 30s}});
    fair_lock waiter(pool, "restart", {.timing = {.ttl = 30s}, .waiter_lease = 600ms});
    ASSERT_TRUE(holder.acquire(0ms));
    auto got = std::async(std::launch::async, [&] {
        waiter.lock();  // rides through the outage
        return clock_type::now();
    });
    ASSERT_TRUE(eventually([&] { return llen(s, holder.key() + ":queue") == 1; }));
    s.kill();
    // A timed wait meanwhile: a typed error or false, within its bound, never a hang.
    fair_lock timed(pool, "restart", {.timing = {.ttl = 30s}});
    auto t0 = clock_type::now();
    try {
        EXPECT_FALSE(timed.try_lock_for(200ms));
    } catch (const error&) {}
    EXPECT_LT(clock_type::now() - t0, 1500ms);
    std::this_thread::sleep_for(500ms);
    s.restart();  // no persistence: the lock and the queue are gone
    const auto restarted = clock_type::now();
    ASSERT_EQ(got.wait_for(10s), std::future_status::ready) << "the waiter hangs after the restart";
    EXPECT_LT(got.get() - restarted, 3s);
    EXPECT_TRUE(waiter.held());
    EXPECT_FALSE(holder.release());  // its key went with the restart
    EXPECT_TRUE(waiter.release());
    EXPECT_TRUE(s.keys_without_ttl().empty());
}

TEST(FairLockFault, PausedServerBoundsATimedWait) {
    local_server s;
    auto ep = s.endpoint();
    ep.connect_timeout = 200ms;
    ep.command_timeout = 200ms;
    connection_pool pool(ep);
    fair_lock holder(pool, "paused", {.timing = {.ttl = 5s}});
    fair_lock waiter(pool, "paused", {.timing = {.ttl = 5s}, .waiter_lease = 300ms});
    ASSERT_TRUE(holder.acquire(0ms));
    auto got = std::async(std::launch::async, [&]() -> int {
        try {
            return waiter.acquire(700ms) ? 1 : 0;
        } catch (const error&) {
            return -1;  // a typed error is fine; a hang is not
        }
    });
    ASSERT_TRUE(eventually([&] { return llen(s, holder.key() + ":queue") == 1; }));
    s.pause();
    const auto t0 = clock_type::now();
    ASSERT_EQ(got.wait_for(3s), std::future_status::ready)
        << "a timed wait hangs on a paused server";
    EXPECT_NE(got.get(), 1);
    EXPECT_LT(clock_type::now() - t0, 2s);
    s.resume();
    // Its lease runs out: the queue forgets it, and the next waiter is not held up by it.
    std::this_thread::sleep_for(400ms);
    EXPECT_TRUE(holder.release());
    fair_lock next(pool, "paused", {.timing = {.ttl = 5s}});
    EXPECT_TRUE(next.acquire(1s));
    EXPECT_TRUE(next.release());
}
