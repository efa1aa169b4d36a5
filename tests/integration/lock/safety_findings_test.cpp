// Issue 33: the safety findings of the 2026-11-28 correctness review that concern the locks
// (F3, F8, F9), a waiter that rewrote a foreign holder's value, and the two releases the suite
// itself lost (a detached release after SCRIPT FLUSH that no later user of its connection
// read; a late re-lock that brought back a holding its successor had released). Each test
// failed before its fix; the closing note of the issue says how.

#include <redcoord/core/errors.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/lock/fair_lock.hpp>
#include <redcoord/lock/redlock.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/process.hpp>
#include <redcoord/testing/wait.hpp>

#include "master_nodes.hpp"
#include "scripts.hpp"

#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::local_server;
using clock_type = std::chrono::steady_clock;

namespace {

// ---- F3: fencing tokens never go backwards ------------------------------------------------

// One lock object of a kind, seen through what the schedules need.
struct lock_handle {
    std::function<void()> lock;
    std::function<void()> unlock;
    std::function<bool(std::chrono::milliseconds)> acquire;  // true when acquired
    std::function<std::uint64_t()> token;                    // of the current holding
};

// Seeded schedules of two lock objects on one resource, one acting at a time, so every
// release is clean: loops of short sections (releases held back where the lock does that),
// single sections, sections that wait for the other's held-back release, idle gaps around and
// beyond the TTL (the fencing counters expire: a node's counter starts again from the
// server's TIME while the others' go on, so the nodes' counters diverge), re-locks in place.
// Every token handed out must exceed every token handed out before it.
void expect_tokens_increase(const std::function<lock_handle(int)>& make,
                            std::chrono::milliseconds ttl, std::uint32_t seed,
                            std::chrono::milliseconds run_for) {
    std::mt19937 rnd(seed);
    lock_handle obj[2] = {make(0), make(1)};
    std::uint64_t highest = 0;
    std::string last_step;
    int grants = 0;
    auto check = [&](int who, const std::string& step) {
        const auto t = obj[who].token();
        ++grants;
        ASSERT_GT(t, highest) << "seed " << seed << ": object " << who << "'s token " << t << " ("
                              << step << ") is not above " << highest << " (" << last_step << ")";
        highest = t;
        last_step = step;
    };
    const auto until = clock_type::now() + run_for;
    while (clock_type::now() < until && !::testing::Test::HasFatalFailure()) {
        const int who = static_cast<int>(rnd() % 2);
        std::ostringstream step;
        switch (rnd() % 5) {
            case 0:
            case 1: {  // a loop of short sections: held-back releases, re-locks in place
                const int n = 2 + static_cast<int>(rnd() % 20);
                for (int i = 0; i < n && !::testing::Test::HasFatalFailure(); ++i) {
                    obj[who].lock();
                    step.str("");
                    step << "loop " << i << "/" << n;
                    check(who, step.str());
                    obj[who].unlock();
                }
                break;
            }
            case 2: {  // one section, the other object then waits for its release
                obj[who].lock();
                check(who, "section");
                obj[who].unlock();
                if (obj[1 - who].acquire(2 * ttl + 500ms)) {
                    check(1 - who, "waited for the other's release");
                    obj[1 - who].unlock();
                }
                break;
            }
            default: {  // idle: around the TTL or well beyond it (counters expire)
                const auto gap = std::chrono::milliseconds(
                    rnd() % 2 ? ttl.count() - 10 + static_cast<long>(rnd() % 20)
                              : ttl.count() + static_cast<long>(rnd() % (3 * ttl.count())));
                std::this_thread::sleep_for(gap);
                break;
            }
        }
    }
    EXPECT_GT(grants, 20) << "seed " << seed;
}

template <class Lock>
lock_handle handle_of(Lock& l) {
    return {[&l] { l.lock(); }, [&l] { l.unlock(); },
            [&l](std::chrono::milliseconds w) { return l.acquire(w).has_value(); },
            [&l] { return l.fencing_token(); }};
}

}  // namespace

TEST(Redlock, F3_FencingNeverGoesBackwardsAfterCleanReleases) {
    redcoord::testing::master_nodes three(3);
    auto& nodes = three.nodes;
    constexpr auto ttl = 120ms;
    for (std::uint32_t seed = 1; seed <= 3 && !HasFatalFailure(); ++seed) {
        std::vector<std::unique_ptr<redlock>> locks;
        expect_tokens_increase(
            [&](int) {
                redlock_options o;
                o.timing.ttl = ttl;
                o.node_timeout = 50ms;
                o.defer_release = true;
                locks.push_back(std::make_unique<redlock>(nodes, "f3-" + std::to_string(seed), o));
                return handle_of(*locks.back());
            },
            ttl, seed, 2500ms);
    }
}

TEST(DistributedLock, F3_FencingNeverGoesBackwardsAfterCleanReleases) {
    local_server server;
    connection_pool pool(server.endpoint());
    constexpr auto ttl = 120ms;
    for (std::uint32_t seed = 1; seed <= 2 && !HasFatalFailure(); ++seed) {
        std::vector<std::unique_ptr<distributed_lock>> locks;
        expect_tokens_increase(
            [&](int) {
                lock_options o;
                o.timing.ttl = ttl;
                o.defer_release = true;
                locks.push_back(
                    std::make_unique<distributed_lock>(pool, "f3-" + std::to_string(seed), o));
                return handle_of(*locks.back());
            },
            ttl, seed, 2000ms);
    }
}

TEST(FairLock, F3_FencingNeverGoesBackwardsAfterCleanReleases) {
    local_server server;
    connection_pool pool(server.endpoint());
    constexpr auto ttl = 120ms;
    for (std::uint32_t seed = 1; seed <= 2 && !HasFatalFailure(); ++seed) {
        std::vector<std::unique_ptr<fair_lock>> locks;
        expect_tokens_increase(
            [&](int) {
                fair_lock_options o;
                o.timing.ttl = ttl;
                locks.push_back(std::make_unique<fair_lock>(pool, "f3-" + std::to_string(seed), o));
                return handle_of(*locks.back());
            },
            ttl, seed, 2000ms);
    }
}

// The script side of F3 on its own: a floor (the token of a release held back long ago)
// never raises an absent counter; a missing counter starts again at the server's TIME.
TEST(Redlock, F3_AStaleFloorNeverRaisesAnAbsentCounter) {
    local_server server;
    connection_pool pool(server.endpoint());
    const std::string key = "redcoord:lock:{f3-script}", fence = key + ":fence";
    const std::string turn = key + ":turn", waiting = key + ":waiting";
    // B's token, from a counter seeded at TIME: far above the stale floor below.
    auto b = detail::acquire_script().run(
        pool, {key, fence, turn, waiting},
        {"tokenB", "1000", "-", "ownerB", "10", "50", "", "0", "0", "1"});
    ASSERT_TRUE(b.is_integer());
    const auto b_token = b.integer();
    (void)pool.command({"DEL", key, fence, turn, waiting});  // released; the counter expired
    // A's acquire carrying the floor of a release held back long before B came.
    auto a = detail::acquire_script().run(
        pool, {key, fence, turn, waiting},
        {"tokenA", "1000", "-", "ownerA", "10", "50", "tokenOld", "1000", "0", "1"});
    ASSERT_TRUE(a.is_integer());
    EXPECT_GT(a.integer(), b_token) << "the absent counter was raised to the stale floor";
    (void)pool.command({"DEL", key, fence, turn, waiting});
    // The release script alike: its floor never creates an absent counter.
    (void)detail::release_script().run(pool, {key, fence}, {"tokenA", "1000", "1000"});
    EXPECT_EQ(pool.command({"EXISTS", fence}).integer(), 0);
}

// ---- F8: a lost try_lock() reply does not strand fair_lock's key -------------------------

TEST(FairLock, F8_LostTryLockReplyGivesTheKeyBack) {
    local_server s;
    endpoint ep = s.endpoint();
    ep.command_timeout = 100ms;
    connection_pool pool(ep);
    (void)pool.command({"PING"});  // connected before the server stalls
    fair_lock l(pool, "f8", {.timing = {.ttl = 30s}});
    // The server runs the attempt but answers late: a DEBUG SLEEP queued just before.
    std::thread sleeper([&] { (void)s.command({"DEBUG", "SLEEP", "0.3"}); });
    std::this_thread::sleep_for(50ms);
    try {
        EXPECT_FALSE(l.try_lock());
    } catch (const error&) {
        // A lost reply may also be reported; either way the key must not stay.
    }
    sleeper.join();
    EXPECT_TRUE(redcoord::testing::eventually(
        [&] {
            return s.command({"EXISTS", l.key()}).integer() == 0;
        },
        2s))
        << "the lock key waits for its 30 s TTL, held by nobody; PTTL "
        << s.command({"PTTL", l.key()}).integer() << " ms";
    fair_lock other(pool, "f8", {.timing = {.ttl = 30s}});
    EXPECT_TRUE(other.try_lock());
    other.unlock();
}

// ---- F9: SIGKILL right after unlock() --------------------------------------------------

namespace {

// A process runs `n` x lock()/unlock() and SIGKILLs itself right after the last unlock();
// another process must then take the lock within 50 ms.
void expect_free_soon_after_a_kill(const char* kind, int n, std::vector<const local_server*> at) {
    std::vector<std::string> argv{LOCK_KILL_CHILD_PATH, kind, std::to_string(n), "f9"};
    std::vector<std::unique_ptr<connection_pool>> pools;
    std::vector<connection_pool*> nodes;
    for (const auto* s : at) {
        argv.push_back(s->url());
        pools.push_back(std::make_unique<connection_pool>(s->endpoint()));
        nodes.push_back(pools.back().get());
        (void)nodes.back()->command({"PING"});
    }
    redcoord::testing::process child(argv);
    const auto status = child.wait_for(20s);
    ASSERT_TRUE(status.has_value()) << "the child did not end";
    ASSERT_EQ(*status, 128 + SIGKILL) << "the child did not reach its SIGKILL";
    bool got = false;
    if (std::string(kind) == "redlock") {
        redlock l(nodes, "f9", {.timing = {.ttl = 30s}});
        got = l.acquire(50ms).has_value();
    } else if (std::string(kind) == "fair") {
        fair_lock l(*nodes.front(), "f9", {.timing = {.ttl = 30s}});
        got = l.acquire(50ms).has_value();
    } else {
        distributed_lock l(*nodes.front(), "f9", {.timing = {.ttl = 30s}});
        got = l.acquire(50ms).has_value();
    }
    EXPECT_TRUE(got) << kind << ", " << n << " x lock()/unlock(): the lock was still held 50 ms "
                     << "after the process died, PTTL "
                     << at.front()->command({"PTTL", "redcoord:lock:{f9}"}).integer() << " ms";
}

}  // namespace

TEST(DistributedLock, F9_KilledRightAfterUnlockFreesTheLockAtOnce) {
    local_server s;
    expect_free_soon_after_a_kill("single", 1, {&s});
    (void)s.command({"FLUSHALL"});
    expect_free_soon_after_a_kill("single", 20, {&s});
}

TEST(Redlock, F9_KilledRightAfterUnlockFreesTheLockAtOnce) {
    auto servers = redcoord::testing::start_masters(3);
    expect_free_soon_after_a_kill("redlock", 20,
                                  {servers[0].get(), servers[1].get(), servers[2].get()});
}

TEST(FairLock, F9_KilledRightAfterUnlockFreesTheLockAtOnce) {
    local_server s;
    expect_free_soon_after_a_kill("fair", 20, {&s});
}

// ---- A waiter never rewrites a holder's value --------------------------------------------

namespace {

// The standard single-instance pattern of the Redlock page, as other clients (redis-py,
// redsync, node-redlock, Redisson) implement it, in a few lines over hiredis: SET NX PX to
// take, compare-and-delete to release.
class foreign_client {
public:
    explicit foreign_client(const local_server& s) {
        ctx_ = redisConnect("127.0.0.1", s.port());
        if (!ctx_ || ctx_->err) throw std::runtime_error("foreign client: cannot connect");
    }
    ~foreign_client() { redisFree(ctx_); }
    foreign_client(const foreign_client&) = delete;
    foreign_client& operator=(const foreign_client&) = delete;

    bool take(const std::string& key, const std::string& token) {
        auto* r = static_cast<redisReply*>(redisCommand(ctx_, "SET %b %b NX PX 10000", key.data(),
                                                        key.size(), token.data(), token.size()));
        const bool ok = r && r->type == REDIS_REPLY_STATUS;
        freeReplyObject(r);
        return ok;
    }
    bool release(const std::string& key, const std::string& token) {
        auto* r = static_cast<redisReply*>(redisCommand(
            ctx_, "EVAL %s 1 %b %b",
            "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) "
            "else return 0 end",
            key.data(), key.size(), token.data(), token.size()));
        const bool ok = r && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
        freeReplyObject(r);
        return ok;
    }
    std::string value(const std::string& key) {
        auto* r = static_cast<redisReply*>(redisCommand(ctx_, "GET %b", key.data(), key.size()));
        std::string v = r && r->type == REDIS_REPLY_STRING ? std::string(r->str, r->len) : "";
        freeReplyObject(r);
        return v;
    }

private:
    redisContext* ctx_ = nullptr;
};

}  // namespace

TEST(DistributedLock, AWaiterNeverRewritesAForeignHoldersValue) {
    local_server s;
    if (s.options().tls)
        GTEST_SKIP() << "the foreign client speaks plain TCP (hiredis without TLS)";
    connection_pool pool(s.endpoint());
    distributed_lock l(pool, "foreign", {.timing = {.ttl = 10s}});
    foreign_client other(s);
    ASSERT_TRUE(other.take(l.key(), "foreigntoken"));
    EXPECT_FALSE(l.acquire(300ms));  // waits, refused: it asks for a release notice
    EXPECT_EQ(other.value(l.key()), "foreigntoken");
    EXPECT_TRUE(other.release(l.key(), "foreigntoken"))
        << "the foreign client's compare-and-delete found its value changed";
    EXPECT_TRUE(l.try_lock());
    l.unlock();
}

TEST(Redlock, AWaiterNeverRewritesAForeignHoldersValue) {
    auto servers = redcoord::testing::start_masters(3);
    if (servers[0]->options().tls)
        GTEST_SKIP() << "the foreign client speaks plain TCP (hiredis without TLS)";
    std::vector<std::unique_ptr<connection_pool>> pools;
    std::vector<connection_pool*> nodes;
    std::vector<std::unique_ptr<foreign_client>> others;
    for (auto& s : servers) {
        pools.push_back(std::make_unique<connection_pool>(s->endpoint()));
        nodes.push_back(pools.back().get());
        others.push_back(std::make_unique<foreign_client>(*s));
    }
    redlock l(nodes, "foreign", {.timing = {.ttl = 10s}});
    for (auto& o : others) ASSERT_TRUE(o->take(l.key(), "foreigntoken"));
    EXPECT_FALSE(l.acquire(300ms));
    for (std::size_t i = 0; i < others.size(); ++i) {
        EXPECT_EQ(others[i]->value(l.key()), "foreigntoken") << "node " << i;
        EXPECT_TRUE(others[i]->release(l.key(), "foreigntoken")) << "node " << i;
    }
    EXPECT_TRUE(l.try_lock());
    l.unlock();
}

TEST(FairLock, AWaiterNeverRewritesAForeignHoldersValue) {
    local_server s;
    if (s.options().tls)
        GTEST_SKIP() << "the foreign client speaks plain TCP (hiredis without TLS)";
    connection_pool pool(s.endpoint());
    fair_lock l(pool, "foreign", {.timing = {.ttl = 10s}});
    distributed_lock plain(pool, "foreign",
                           {.timing = {.ttl = 10s}});  // the kind that asks for notices
    foreign_client other(s);
    ASSERT_TRUE(other.take(l.key(), "foreigntoken"));
    EXPECT_FALSE(l.acquire(300ms));
    EXPECT_FALSE(plain.acquire(300ms));
    EXPECT_EQ(other.value(l.key()), "foreigntoken");
    EXPECT_TRUE(other.release(l.key(), "foreigntoken"));
    EXPECT_TRUE(l.try_lock());
    l.unlock();
}

// A redcoord holder whose waiter asked for a release notice is still released by the
// standard compare-and-delete of its own token, and its release still wakes the waiter.
TEST(DistributedLock, AMarkedHoldingKeepsItsExactValue) {
    local_server s;
    connection_pool pool(s.endpoint());
    distributed_lock a(pool, "exact", {.timing = {.ttl = 10s}}),
        b(pool, "exact", {.timing = {.ttl = 10s}});
    auto got = a.acquire(0ms);
    ASSERT_TRUE(got);
    auto waiter = std::thread([&] {
        if (b.acquire(5s)) b.unlock();
    });
    std::this_thread::sleep_for(200ms);  // b has been refused and waits
    EXPECT_EQ(s.command({"GET", a.key()}).text(), got->token);
    a.unlock();
    waiter.join();
}

// ---- Releases the suite lost -------------------------------------------------------------

// A detached release (unlock()) whose connection then idled under another: after SCRIPT
// FLUSH its EVALSHA was refused (NOSCRIPT) and only a later user of that very connection would
// have run it again, but the pool kept handing out the other one, so the key stayed for its
// TTL (DistributedLock.m5_HeldBackReleaseAfterScriptFlushReleases failed this way when its
// polling borrowed the connection that was not the flush timer's).
TEST(DistributedLock, DetachedReleaseRunsWithoutALaterUserOfItsConnection) {
    local_server s;
    connection_pool pool(s.endpoint());
    distributed_lock a(pool, "detached", {.timing = {.ttl = 30s}});
    auto first = pool.borrow();  // leased through the unlock below, returned after it
    a.lock();                    // on a second connection, which learns the scripts
    a.unlock();
    std::this_thread::sleep_for(5ms);  // not a re-locking loop: the release goes at once
    a.lock();
    (void)s.command({"SCRIPT", "FLUSH"});
    a.unlock();  // EVALSHA on the second connection, its reply left for the next user
    first = {};  // the first connection returns last: the pool hands it out next
    EXPECT_TRUE(redcoord::testing::eventually(
        [&] {
            return pool.command({"EXISTS", a.key()}).integer() == 0;
        },
        1s))
        << "the release never ran: the key waits for its TTL";
}

// BusyPool.RedlockUnlockWaitsBrieflyForABusyPool left "an earlier token" on a node: a re-lock
// round (token T2, renewing T1) decided at a majority and left that node in flight; the next
// re-lock (T3, renewing T2) overtook it there on another connection and found T1, not T2; the
// late T2 attempt then renewed T1 into T2, whose release had already happened. The script
// now leaves a tombstone for T2 where it does not find it, so the late attempt takes nothing
// and lets T1 go.
TEST(Redlock, ALateReLockOfAReleasedHoldingTakesNothing) {
    local_server server;
    connection_pool pool(server.endpoint());
    const std::string key = "redcoord:lock:{late-relock}", fence = key + ":fence";
    const std::string turn = key + ":turn", waiting = key + ":waiting";
    auto acquire = [&](const char* token, const char* previous) {
        return detail::acquire_script().run(
            pool, {key, fence, turn, waiting},
            {token, "10000", "-", "owner", "10", "50", previous, "0", "0", "1"});
    };
    ASSERT_TRUE(acquire("T1", "").is_integer());
    ASSERT_LT(acquire("T1", "").integer(), 0);  // held: refused (the owner's own key)
    // T3 (renewing T2) arrives first and finds T1: refused here.
    auto t3 = acquire("T3", "T2");
    EXPECT_LT(t3.integer(), 0);
    // T2 (renewing T1) arrives late.
    (void)acquire("T2", "T1");
    const auto v = pool.command({"GET", key});
    EXPECT_TRUE(v.is_nil()) << "the late re-lock holds the key with " << v.text()
                            << ", a holding already released";
}
