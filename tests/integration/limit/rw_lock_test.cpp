// rw_lock on a real server: many readers or one writer, the standard lock guards, fencing
// tokens across modes, writer preference (a waiting writer stops new readers, and its intent
// lapses when it dies), waits woken by releases, leases that end, the watchdog, on_lost, and
// killed or paused holders whose leases lapse.

#include <redcoord/core/errors.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/limit/rw_lock.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/process.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <future>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::eventually;
using redcoord::testing::local_server;

namespace {

std::string key(const std::string& name, std::string_view suffix = {}) {
    return make_key(default_prefix, "rwlock", name, suffix);
}

redcoord::testing::process child(local_server& s, const std::string& name,
                                 std::chrono::milliseconds ttl, const char* mode,
                                 std::chrono::milliseconds hold, const char* dog) {
    return redcoord::testing::process({RW_LOCK_KILL_CHILD_PATH, s.url(), name,
                                       std::to_string(ttl.count()), mode,
                                       std::to_string(hold.count()), dog});
}

}  // namespace

TEST(RwLock, ManyReadersOrOneWriter) {
    local_server s;
    connection_pool pool(s.endpoint());
    rw_lock a(pool, "doc", {.timing = {.ttl = 10s}}), b(pool, "doc", {.timing = {.ttl = 10s}}),
        c(pool, "doc", {.timing = {.ttl = 10s}});
    ASSERT_TRUE(a.try_lock_shared());
    ASSERT_TRUE(b.try_lock_shared());
    ASSERT_TRUE(b.try_lock_shared());  // one object may hold several shares
    EXPECT_EQ(b.shared_count(), 2u);
    EXPECT_FALSE(c.try_lock());  // readers hold
    a.unlock_shared();
    b.unlock_shared();
    EXPECT_FALSE(c.try_lock());
    b.unlock_shared();
    ASSERT_TRUE(c.try_lock());
    EXPECT_TRUE(c.owns_lock());
    EXPECT_FALSE(a.try_lock_shared());  // the writer holds
    EXPECT_FALSE(b.try_lock());
    c.unlock();
    EXPECT_FALSE(c.owns_lock());
    EXPECT_TRUE(a.try_lock_shared());
}

TEST(RwLock, WorksWithTheStandardLockGuards) {
    local_server s;
    connection_pool pool(s.endpoint());
    rw_lock w(pool, "guards", {.timing = {.ttl = 10s}}),
        r(pool, "guards", {.timing = {.ttl = 10s}});
    {
        std::unique_lock<rw_lock> l(w);
        EXPECT_TRUE(w.owns_lock());
        std::shared_lock<rw_lock> refused(r, std::try_to_lock);
        EXPECT_FALSE(refused.owns_lock());
        std::shared_lock<rw_lock> timed(r, 100ms);
        EXPECT_FALSE(timed.owns_lock());
    }
    {
        std::shared_lock<rw_lock> l1(r);
        std::shared_lock<rw_lock> l2(r, std::chrono::steady_clock::now() + 5s);
        EXPECT_TRUE(l2.owns_lock());
        EXPECT_EQ(r.shared_count(), 2u);
        std::unique_lock<rw_lock> refused(w, std::try_to_lock);
        EXPECT_FALSE(refused.owns_lock());
    }
    EXPECT_EQ(r.shared_count(), 0u);
    std::unique_lock<rw_lock> l(w, 5s);
    EXPECT_TRUE(l.owns_lock());
}

TEST(RwLock, FencingTokensStrictlyIncreaseAcrossModes) {
    local_server s;
    connection_pool pool(s.endpoint());
    rw_lock rw(pool, "fenced", {.timing = {.ttl = 10s}});
    std::uint64_t last = 0;
    for (int i = 0; i < 6; ++i) {
        if (i % 2 == 0) {
            ASSERT_TRUE(rw.try_lock());
            EXPECT_GT(rw.fencing_token(), last);
            last = rw.fencing_token();
            rw.unlock();
            EXPECT_EQ(rw.fencing_token(), 0u);
        } else {
            ASSERT_TRUE(rw.try_lock_shared());
            ASSERT_TRUE(rw.try_lock_shared());
            EXPECT_GT(rw.shared_fencing_token(), last);
            last = rw.shared_fencing_token();
            rw.unlock_shared();
            rw.unlock_shared();
        }
    }
}

TEST(RwLock, WaitingWriterStopsNewReadersAndIsWokenByTheRelease) {
    local_server s;
    connection_pool pool(s.endpoint());
    // Leases of a minute: a writer that relied on a lease's end would wait that long.
    rw_lock reader(pool, "pref", {.timing = {.ttl = 60s}}),
        writer(pool, "pref", {.timing = {.ttl = 60s}}),
        late(pool, "pref", {.timing = {.ttl = 60s}});
    ASSERT_TRUE(reader.try_lock_shared());
    auto w = std::async(std::launch::async, [&] { return writer.try_lock_for(30s); });
    ASSERT_TRUE(eventually([&] {
        return s.command({"ZCARD", key("pref", "writers")}).integer() == 1;
    }));
    EXPECT_FALSE(late.try_lock_shared());  // the waiting writer's intent refuses new shares
    const auto released_at = std::chrono::steady_clock::now();
    reader.unlock_shared();
    ASSERT_TRUE(w.get());
    EXPECT_LT(std::chrono::steady_clock::now() - released_at, 20s);
    EXPECT_EQ(s.command({"EXISTS", key("pref", "writers")}).integer(), 0);  // intent withdrawn
    // A reader waiting for the writer is woken by its release.
    auto r = std::async(std::launch::async, [&] { return late.try_lock_shared_for(30s); });
    ASSERT_TRUE(eventually([&] {
        return s.command({"EXISTS", key("pref", "waiting")}).integer() == 1;
    }));
    writer.unlock();
    EXPECT_TRUE(r.get());
}

TEST(RwLock, TimedWriterThatGivesUpWithdrawsItsIntent) {
    local_server s;
    connection_pool pool(s.endpoint());
    rw_lock reader(pool, "giveup", {.timing = {.ttl = 30s}}),
        writer(pool, "giveup", {.timing = {.ttl = 30s}});
    ASSERT_TRUE(reader.try_lock_shared());
    EXPECT_FALSE(writer.try_lock_for(300ms));
    EXPECT_FALSE(writer.try_lock_until(std::chrono::system_clock::now() + 100ms));
    EXPECT_EQ(s.command({"EXISTS", key("giveup", "writers")}).integer(), 0);
    EXPECT_TRUE(reader.try_lock_shared());  // nothing holds new readers back
}

TEST(RwLock, KilledWaitingWritersIntentLapses) {
    local_server s;
    connection_pool pool(s.endpoint());
    rw_lock reader(pool, "dead-writer", {.timing = {.ttl = 30s}});
    ASSERT_TRUE(reader.try_lock_shared());
    auto w = child(s, "dead-writer", 30s, "wait-write", 0ms, "plain");
    ASSERT_TRUE(eventually([&] {
        return s.command({"ZCARD", key("dead-writer", "writers")}).integer() == 1;
    }));
    w.kill();
    // Its intent still refuses new shares, until it lapses (max_retry_interval + 500 ms).
    EXPECT_FALSE(reader.try_lock_shared());
    EXPECT_TRUE(reader.try_lock_shared_for(20s));
}

TEST(RwLock, KilledReadersShareReturnsAfterItsTtl) {
    local_server s;
    connection_pool pool(s.endpoint());
    rw_lock writer(pool, "dead-reader", {.timing = {.ttl = 30s}});
    auto r = child(s, "dead-reader", 1500ms, "read", 0ms, "plain");
    ASSERT_EQ(r.wait_for(30s), std::optional<int>(128 + SIGKILL));
    const auto died = std::chrono::steady_clock::now();
    EXPECT_FALSE(writer.try_lock());  // the dead reader's lease still runs
    ASSERT_TRUE(writer.try_lock_for(20s));
    EXPECT_GT(std::chrono::steady_clock::now() - died, 200ms);
}

TEST(RwLock, PausedWriterLosesItsLeaseAndHearsOfIt) {
    local_server s;
    connection_pool pool(s.endpoint());
    rw_lock reader(pool, "paused", {.timing = {.ttl = 30s}});
    // Holds 3 s with a watchdog on a 600 ms lease; paused meanwhile, its lease lapses.
    auto w = child(s, "paused", 600ms, "write", 3000ms, "watchdog");
    ASSERT_TRUE(eventually([&] {
        return s.command({"EXISTS", key("paused", "writer")}).integer() == 1;
    }));
    w.signal(SIGSTOP);
    EXPECT_TRUE(reader.try_lock_shared_for(20s));  // the paused writer's lease ended
    w.signal(SIGCONT);
    // Resumed, its watchdog finds the lease gone: lost(), and on_lost was called (exit 4).
    EXPECT_EQ(w.wait_for(60s), std::optional<int>(4));
}

TEST(RwLock, WatchdogKeepsTheHoldPastItsTtl) {
    local_server s;
    connection_pool pool(s.endpoint());
    // Extensions every 500 ms on a 1.5 s lease: a loaded machine's delays stay far inside it.
    rw_lock w(pool, "watched", {.timing = {.ttl = 1500ms}, .watchdog = true}), r(pool, "watched");
    ASSERT_TRUE(w.try_lock());
    std::this_thread::sleep_for(4s);
    EXPECT_FALSE(w.lost());
    EXPECT_FALSE(r.try_lock_shared());
    w.unlock();
    EXPECT_TRUE(r.try_lock_shared());
}

TEST(RwLock, UnextendedLeaseEndsAndOnLostIsCalled) {
    local_server s;
    connection_pool pool(s.endpoint());
    rw_lock w(pool, "lapsed", {.timing = {.ttl = 300ms}}), other(pool, "lapsed");
    std::atomic<int> told{0};
    std::string said;
    std::mutex mu;
    auto c = w.on_lost([&](const std::string& name) {
        std::lock_guard l(mu);
        said = name;
        ++told;
    });
    ASSERT_TRUE(w.try_lock_shared());
    ASSERT_TRUE(eventually([&] { return told.load() == 1; }));
    {
        std::lock_guard l(mu);
        EXPECT_EQ(said, "lapsed");
    }
    EXPECT_TRUE(w.lost());
    EXPECT_TRUE(other.try_lock_for(20s));
    EXPECT_FALSE(w.extend());  // the share's lease had ended
    w.unlock_shared();
}

TEST(RwLock, ExtendKeepsTheHolds) {
    local_server s;
    connection_pool pool(s.endpoint());
    rw_lock r(pool, "extended", {.timing = {.ttl = 3s}}), w(pool, "extended");
    ASSERT_TRUE(r.try_lock_shared());
    // Past the first lease's end only by the extensions.
    for (int i = 0; i < 4; ++i) {
        std::this_thread::sleep_for(1s);
        ASSERT_TRUE(r.extend()) << i;
    }
    EXPECT_FALSE(w.try_lock());
    EXPECT_FALSE(r.lost());
}

TEST(RwLock, BadInputIsATypedErrorBeforeAnythingIsSent) {
    local_server s;
    connection_pool pool(s.endpoint());
    EXPECT_THROW(rw_lock(pool, ""), invalid_argument);
    EXPECT_THROW(rw_lock(pool, "a}b"), invalid_argument);
    EXPECT_THROW(rw_lock(pool, "x", {.timing = {.ttl = 5ms}}), invalid_argument);
    EXPECT_THROW(rw_lock(pool, "x", {.timing = {.max_retry_interval = 0ms}}), invalid_argument);
    rw_lock rw(pool, "x");
    EXPECT_THROW(rw.unlock(), invalid_argument);
    EXPECT_THROW(rw.unlock_shared(), invalid_argument);
    EXPECT_THROW((void)rw.extend(1ms), invalid_argument);
    ASSERT_TRUE(rw.try_lock());
    EXPECT_THROW(rw.lock(), invalid_argument);  // not recursive: it would wait for itself
    EXPECT_THROW(rw.lock_shared(), invalid_argument);
    rw.unlock();
    ASSERT_TRUE(rw.try_lock_shared());
    EXPECT_THROW(rw.lock(), invalid_argument);  // no upgrade: it would wait for its own share
    rw.unlock_shared();
}

TEST(RwLock, ThreadsNeverOverlapAWriter) {
    local_server s;
    connection_pool pool(s.endpoint());
    std::atomic<int> readers{0}, writers{0}, overlaps{0}, done{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < 6; ++t)
        ts.emplace_back([&, t] {
            rw_lock rw(pool, "crowd", {.timing = {.ttl = 10s}});
            for (int i = 0; i < 12; ++i) {
                if ((t + i) % 3 == 0) {
                    std::unique_lock<rw_lock> l(rw, 30s);
                    ASSERT_TRUE(l.owns_lock());
                    if (++writers > 1 || readers.load() > 0) ++overlaps;
                    std::this_thread::sleep_for(1ms);
                    --writers;
                } else {
                    std::shared_lock<rw_lock> l(rw, 30s);
                    ASSERT_TRUE(l.owns_lock());
                    ++readers;
                    if (writers.load() > 0) ++overlaps;
                    std::this_thread::sleep_for(1ms);
                    --readers;
                }
                ++done;
            }
        });
    for (auto& t : ts) t.join();
    EXPECT_EQ(done.load(), 6 * 12);
    EXPECT_EQ(overlaps.load(), 0);
}
