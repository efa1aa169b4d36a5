// distributed_lock against a real redis-server: semantics, fencing, waking, watchdog.

#include <redcoord/core/holder_label.hpp>
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::local_server;

namespace {
struct one_server {
    local_server server;
    connection_pool pool{server.endpoint()};
};
}  // namespace

TEST(DistributedLock, AcquireSetsKeyWithTokenAndTtlReleaseDeletesIt) {
    one_server s;
    distributed_lock a(s.pool, "res", {.timing = {.ttl = 10s}});
    auto got = a.acquire(0ms);
    ASSERT_TRUE(got);
    // 40 random hex digits, then the holder label (this process's <host>:<pid> by default).
    EXPECT_EQ(got->token.size(), 41u + default_holder_label().size());
    EXPECT_EQ(holder_label_of(got->token), default_holder_label());
    EXPECT_GT(got->remaining(), 9s);
    EXPECT_LE(got->remaining(), 10s);
    EXPECT_EQ(s.server.command({"GET", a.key()}).text(), got->token);
    const auto pttl = s.server.command({"PTTL", a.key()}).integer();
    EXPECT_GT(pttl, 9000);
    EXPECT_LE(pttl, 10000);
    EXPECT_TRUE(a.held());
    EXPECT_FALSE(a.lost());

    distributed_lock b(s.pool, "res", {.timing = {.ttl = 10s}});
    EXPECT_FALSE(b.try_lock());
    EXPECT_FALSE(b.acquire(50ms));

    EXPECT_TRUE(a.release());
    EXPECT_FALSE(a.held());
    EXPECT_TRUE(s.server.command({"GET", a.key()}).is_nil());
    EXPECT_FALSE(a.release());  // second release: nothing held
    EXPECT_TRUE(b.try_lock());
    b.unlock();
}

TEST(DistributedLock, FencingTokensStrictlyIncreaseAcrossHolders) {
    one_server s;
    distributed_lock a(s.pool, "fenced"), b(s.pool, "fenced");
    std::uint64_t last = 0;
    for (int i = 0; i < 20; ++i) {
        auto& l = (i % 2) ? a : b;
        auto got = l.acquire(1s);
        ASSERT_TRUE(got);
        EXPECT_GT(got->fencing_token, last);
        EXPECT_EQ(l.fencing_token(), got->fencing_token);
        last = got->fencing_token;
        EXPECT_TRUE(l.release());
    }
    // Failed attempts do not consume tokens: the counter moves only with acquisitions.
    ASSERT_TRUE(a.acquire(0ms));
    for (int i = 0; i < 5; ++i) EXPECT_FALSE(b.try_lock());
    EXPECT_EQ(std::stoull(s.server.command({"GET", "redcoord:lock:{fenced}:fence"}).text()),
              last + 1);
}

TEST(DistributedLock, WaiterWakesOnReleaseWithoutPolling) {
    one_server s;
    distributed_lock holder(s.pool, "wake", {.timing = {.ttl = 30s}});
    distributed_lock waiter(s.pool, "wake", {.timing = {.ttl = 30s}});
    ASSERT_TRUE(holder.acquire(0ms));
    const auto before = s.server.command_calls("evalsha");
    auto t0 = std::chrono::steady_clock::now();
    auto fut = std::async(std::launch::async, [&] { return waiter.acquire(20s); });
    std::this_thread::sleep_for(1500ms);
    ASSERT_EQ(fut.wait_for(0ms), std::future_status::timeout);
    EXPECT_TRUE(holder.release());
    auto got = fut.get();
    const auto took = std::chrono::steady_clock::now() - t0;
    ASSERT_TRUE(got);
    // Woken by the release, far before the holder's 30 s TTL would have run out...
    EXPECT_LT(took, 10s);
    // ...and with a handful of attempts, not one every few milliseconds for 1.5 s.
    const auto attempts = s.server.command_calls("evalsha") - before;
    EXPECT_LE(attempts, 6) << "waiter polled";
    waiter.unlock();
}

TEST(DistributedLock, WaiterRetriesWhenHoldersTtlRunsOut) {
    one_server s;
    distributed_lock crashed(s.pool, "expire", {.timing = {.ttl = 400ms}});
    ASSERT_TRUE(crashed.acquire(0ms));
    // A crashed holder: its key just expires and nobody publishes a release.
    distributed_lock waiter(s.pool, "expire", {.timing = {.ttl = 5s}});
    const auto t0 = std::chrono::steady_clock::now();
    auto got = waiter.acquire(5s);
    ASSERT_TRUE(got);
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 300ms);
    EXPECT_TRUE(crashed.lost());
    EXPECT_FALSE(crashed.release());  // not ours any more: deletes nothing
    EXPECT_EQ(s.server.command({"GET", waiter.key()}).text(), got->token);
}

TEST(DistributedLock, ExpiredHolderCannotReleaseOrExtendTheNextHoldersLock) {
    one_server s;
    distributed_lock first(s.pool, "paused", {.timing = {.ttl = 200ms}});
    distributed_lock second(s.pool, "paused", {.timing = {.ttl = 10s}});
    ASSERT_TRUE(first.acquire(0ms));
    std::this_thread::sleep_for(300ms);  // the holder is "paused" past its TTL
    EXPECT_TRUE(first.lost());
    auto got = second.acquire(2s);
    ASSERT_TRUE(got);
    EXPECT_FALSE(first.extend());  // extension after expiry fails
    EXPECT_THROW(first.check_held(), lock_lost);
    EXPECT_FALSE(first.release());  // and its unlock deletes nothing
    EXPECT_EQ(s.server.command({"GET", second.key()}).text(), got->token);
    EXPECT_TRUE(second.release());
}

TEST(DistributedLock, ExtendPushesTheTtlAndIsBounded) {
    one_server s;
    distributed_lock a(s.pool, "ext", {.timing = {.ttl = 1s}, .max_extensions = 2});
    ASSERT_TRUE(a.acquire(0ms));
    EXPECT_TRUE(a.extend(5s));
    EXPECT_GT(s.server.command({"PTTL", a.key()}).integer(), 4000);
    EXPECT_GT(a.current()->remaining(), 4s);
    EXPECT_TRUE(a.extend());
    EXPECT_FALSE(a.extend());  // budget of 2 spent
    EXPECT_FALSE(a.lost());
    EXPECT_TRUE(a.release());
}

TEST(DistributedLock, ExtensionFindingSomeoneElsesKeyReportsLoss) {
    one_server s;
    distributed_lock a(s.pool, "stolen", {.timing = {.ttl = 10s}});
    std::atomic<int> fired{0};
    std::string what;
    const auto lost_slot = a.on_lost([&](const std::string& r) {
        what = r;
        ++fired;
    });
    ASSERT_TRUE(a.acquire(0ms));
    s.server.command({"SET", a.key(), "someone-else"});
    EXPECT_FALSE(a.extend());
    EXPECT_TRUE(a.lost());
    // The slot runs on the callback executor, soon after extend() found the loss.
    EXPECT_TRUE(redcoord::testing::eventually([&] { return fired.load() == 1; }, 5s));
    std::this_thread::sleep_for(50ms);  // a second call would come now
    EXPECT_EQ(fired.load(), 1);
    EXPECT_EQ(what, "stolen");
    EXPECT_FALSE(a.release());
    EXPECT_EQ(s.server.command({"GET", a.key()}).text(), "someone-else");
}

TEST(DistributedLock, WatchdogKeepsTheLockAcrossTenTtls) {
    one_server s;
    distributed_lock a(s.pool, "dog",
                       {.timing = {.ttl = 300ms}, .watchdog = true, .max_extensions = 1000});
    distributed_lock b(s.pool, "dog", {.timing = {.ttl = 300ms}});
    std::atomic<int> fired{0};
    const auto lost_slot = a.on_lost([&](const std::string&) { ++fired; });
    auto got = a.acquire(0ms);
    ASSERT_TRUE(got);
    const auto until = std::chrono::steady_clock::now() + 3s;  // 10 TTLs
    while (std::chrono::steady_clock::now() < until) {
        EXPECT_FALSE(b.try_lock());
        std::this_thread::sleep_for(100ms);
    }
    EXPECT_FALSE(a.lost());
    EXPECT_EQ(fired.load(), 0);
    EXPECT_EQ(s.server.command({"GET", a.key()}).text(), got->token);
    EXPECT_TRUE(a.release());
    // After release the watchdog stops: nothing re-creates the key.
    std::this_thread::sleep_for(400ms);
    EXPECT_TRUE(s.server.command({"GET", a.key()}).is_nil());
}

TEST(DistributedLock, WatchdogStopsAtMaxExtensions) {
    one_server s;
    distributed_lock a(s.pool, "bounded",
                       {.timing = {.ttl = 150ms}, .watchdog = true, .max_extensions = 3});
    ASSERT_TRUE(a.acquire(0ms));
    // 3 extensions at ttl/3 keep it about 150 + 3*50 ms; after that it must expire.
    std::this_thread::sleep_for(1200ms);
    EXPECT_TRUE(s.server.command({"GET", a.key()}).is_nil());
    EXPECT_TRUE(a.lost());
    EXPECT_FALSE(a.release());
}

TEST(DistributedLock, WatchdogReportsLossWhenItsNodeIsKilled) {
    one_server s;
    auto ep = s.server.endpoint();
    ep.connect_timeout = 100ms;
    ep.command_timeout = 100ms;
    connection_pool pool(ep);
    distributed_lock a(pool, "dying", {.timing = {.ttl = 300ms}, .watchdog = true});
    std::promise<std::string> lost;
    const auto lost_slot = a.on_lost([&](const std::string& r) { lost.set_value(r); });
    ASSERT_TRUE(a.acquire(0ms));
    std::this_thread::sleep_for(400ms);
    EXPECT_FALSE(a.lost());
    s.server.kill();
    auto f = lost.get_future();
    ASSERT_EQ(f.wait_for(3s), std::future_status::ready);
    EXPECT_EQ(f.get(), "dying");
    EXPECT_TRUE(a.lost());
    EXPECT_THROW(a.check_held(), lock_lost);
    // release() cannot reach the node: a typed error, and unlock() swallows it.
    EXPECT_THROW((void)a.release(), error);
}

TEST(DistributedLock, DestructorReleasesAndNeverThrows) {
    one_server s;
    std::string key;
    {
        distributed_lock a(s.pool, "raii", {.watchdog = true});
        ASSERT_TRUE(a.acquire(0ms));
        key = a.key();
    }
    EXPECT_TRUE(s.server.command({"GET", key}).is_nil());
    {
        distributed_lock a(s.pool, "raii", {.watchdog = true});
        ASSERT_TRUE(a.acquire(0ms));
        s.server.kill();  // destructor meets a dead node: swallowed, bounded
    }
}

TEST(DistributedLock, BinaryAndGlobResourceNamesStayExact) {
    one_server s;
    const std::string odd("a*b?[c]\\d\x01\xff", 11);
    distributed_lock a(s.pool, odd), b(s.pool, "a*b?[c]\\d");
    ASSERT_TRUE(a.acquire(0ms));
    EXPECT_TRUE(b.try_lock());  // a different resource, not matched as a pattern
    b.unlock();
    EXPECT_TRUE(a.release());
}

TEST(DistributedLock, NotRecursive) {
    one_server s;
    distributed_lock a(s.pool, "rec");
    a.lock();
    EXPECT_THROW(a.lock(), invalid_argument);
    a.unlock();
}

namespace {
std::int64_t publishes(local_server& s) {
    const auto info = s.command({"INFO", "commandstats"}).text();
    const auto at = info.find("cmdstat_publish:calls=");
    return at == std::string::npos ? 0 : std::stoll(info.substr(at + 22));
}
}  // namespace

TEST(DistributedLock, ReleasePublishesOnlyWhenAWaiterAskedForTheNotice) {
    one_server s;
    distributed_lock a(s.pool, "marked", {.timing = {.ttl = 10s}}),
        b(s.pool, "marked", {.timing = {.ttl = 10s}});
    // Nobody waits: no PUBLISH, the key holds the bare token.
    auto got = a.acquire(0ms);
    ASSERT_TRUE(got);
    EXPECT_EQ(s.server.command({"GET", a.key()}).text(), got->token);
    EXPECT_FALSE(b.try_lock());  // a refusal that will not wait leaves no mark
    EXPECT_EQ(s.server.command({"GET", a.key()}).text(), got->token);
    EXPECT_TRUE(a.release());
    EXPECT_EQ(publishes(s.server), 0);

    // A waiter marks the holder's key; the release publishes once and wakes it long before
    // the holder's 10 s TTL.
    got = a.acquire(0ms);
    ASSERT_TRUE(got);
    auto waiter = std::async(std::launch::async, [&] {
        const auto t0 = std::chrono::steady_clock::now();
        auto w = b.acquire(5s);
        return std::make_pair(w.has_value(), std::chrono::steady_clock::now() - t0);
    });
    const std::string notice = a.key() + ":notice";
    auto asked = [&] {
        auto v = s.server.command({"GET", notice});
        return !v.is_nil() && v.text() == got->token;
    };
    for (int i = 0; i < 500 && !asked(); ++i) std::this_thread::sleep_for(2ms);
    ASSERT_TRUE(asked()) << "the waiter did not ask for the release notice";
    EXPECT_EQ(s.server.command({"GET", a.key()}).text(), got->token);  // the value is untouched
    EXPECT_TRUE(a.extend());
    a.unlock();  // pipelined: the reply is read by the pool's next command
    const auto [woke, took] = waiter.get();
    EXPECT_TRUE(woke);
    EXPECT_LT(took, 3s);
    EXPECT_EQ(publishes(s.server), 1);
    EXPECT_TRUE(b.release());
}

TEST(DistributedLock, UnlockThenLockAgainOnOneConnectionKeepsTheStreamInStep) {
    one_server s;
    for (const bool defer : {false, true}) {
        distributed_lock a(s.pool, "again", {.timing = {.ttl = 10s}, .defer_release = defer});
        std::uint64_t last = 0;
        for (int i = 0; i < 50; ++i) {
            a.lock();
            EXPECT_GT(a.fencing_token(), last);
            last = a.fencing_token();
            a.unlock();
        }
        EXPECT_TRUE(redcoord::testing::eventually(
            [&] {
                return s.pool.command({"EXISTS", a.key()}).integer() == 0;
            },
            2s))
            << "defer_release " << defer;
    }
    // Every pipelined (or held-back and renewed) release ran: the key is gone once the last
    // held-back release is due, and the pool still answers in order.
    EXPECT_EQ(s.pool.command({"ECHO", "in-step"}).text(), "in-step");
}

TEST(DistributedLock, ALoopOfShortSectionsReLocksInOneCommandEach) {
    // With defer_release, lock() right after unlock(): the release is held back and renewed in
    // place by the next attempt, so a section costs one script instead of two; fencing tokens
    // still increase.
    one_server s;
    distributed_lock a(s.pool, "relock", {.timing = {.ttl = 10s}, .defer_release = true});
    a.lock();
    a.unlock();
    const auto calls0 = s.server.command_calls("evalsha") + s.server.command_calls("eval");
    std::uint64_t last = 0;
    const int n = 200;
    for (int i = 0; i < n; ++i) {
        a.lock();
        EXPECT_GT(a.fencing_token(), last);
        last = a.fencing_token();
        a.unlock();
    }
    const auto calls = s.server.command_calls("evalsha") + s.server.command_calls("eval") - calls0;
    EXPECT_LT(calls, n * 3 / 2) << calls << " scripts for " << n << " sections";
    // The last release goes out when due, without another lock() call.
    EXPECT_TRUE(redcoord::testing::eventually(
        [&] {
            return s.pool.command({"EXISTS", a.key()}).integer() == 0;
        },
        2s));
}

TEST(DistributedLock, ByDefaultALoopOfShortSectionsWritesEachRelease) {
    // defer_release is off by default (issue 33, F9): every unlock() has written its release
    // before it returns, so the key is gone by the next command on any connection.
    one_server s;
    distributed_lock a(s.pool, "plain-loop", {.timing = {.ttl = 10s}});
    a.lock();
    a.unlock();
    (void)s.pool.command({"PING"});
    const auto calls0 = s.server.command_calls("evalsha") + s.server.command_calls("eval");
    const int n = 100;
    for (int i = 0; i < n; ++i) {
        a.lock();
        a.unlock();
    }
    (void)s.pool.command({"PING"});  // the last release's reply is read: it ran
    const auto calls = s.server.command_calls("evalsha") + s.server.command_calls("eval") - calls0;
    EXPECT_EQ(calls, 2 * n) << "an acquire and a release per section";
    EXPECT_EQ(s.pool.command({"EXISTS", a.key()}).integer(), 0);
}

TEST(DistributedLock, AHeldBackReleaseLeavesWithTheObject) {
    one_server s;
    std::string key;
    {
        distributed_lock a(s.pool, "leaving", {.timing = {.ttl = 30s}, .defer_release = true});
        key = a.key();
        a.lock();
        a.unlock();
        a.lock();
        a.unlock();  // right after a lock(): held back
    }                // destroyed: sent now, not after the TTL
    EXPECT_TRUE(redcoord::testing::eventually(
        [&] {
            return s.pool.command({"EXISTS", key}).integer() == 0;
        },
        2s));
    // Another process sees the lock free within the hold-back bound when it waits.
    distributed_lock b(s.pool, "leaving", {.timing = {.ttl = 30s}});
    EXPECT_TRUE(b.acquire(1s));
}

TEST(DistributedLock, AReleaseAfterAPauseIsNotHeldBack) {
    // A lock taken now and then (a hand-over, not a loop) releases at once, as before.
    one_server s;
    distributed_lock a(s.pool, "paused", {.timing = {.ttl = 30s}, .defer_release = true});
    for (int i = 0; i < 3; ++i) {
        a.lock();
        a.unlock();
        std::this_thread::sleep_for(5ms);
    }
    a.lock();
    a.unlock();
    // The pool's next user (the same connection) reads the release's reply first.
    EXPECT_EQ(s.pool.command({"EXISTS", a.key()}).integer(), 0);
}

TEST(DistributedLock, AHeldBackReleaseFlushedByTheTimerNeverRefusesTheSameObjectsNextTryLock) {
    // Found by the TLS run of this suite (issue 18): the timer sends a held-back release on a
    // connection of its own, and a try_lock() of the same object made as it fires could reach
    // the server first and be refused by the object's own release in flight.
    one_server s;
    distributed_lock a(s.pool, "flushed", {.timing = {.ttl = 10s}, .defer_release = true});
    const auto linger = std::chrono::microseconds(5000);  // release_deferral::linger
    int refused = 0;
    for (int i = 0; i < 400; ++i) {
        ASSERT_TRUE(a.try_lock());
        a.unlock();
        ASSERT_TRUE(a.try_lock());
        a.unlock();  // right after a lock: held back until the timer flushes it
        // Around the moment the timer fires, so that some rounds race it.
        std::this_thread::sleep_for(linger - 300us + std::chrono::microseconds(i % 7 * 100));
        if (!a.try_lock())
            ++refused;
        else
            a.unlock();
    }
    EXPECT_EQ(refused, 0);
}
