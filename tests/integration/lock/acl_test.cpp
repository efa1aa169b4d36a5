// The lock part as a least-privilege ACL user (issue 18): a user created from exactly
// lock_acl_needs() runs distributed_lock, redlock and fair_lock (waits, fencing, extend, the
// watchdog, WAIT for a replica); a user missing one needed command, key or channel gets
// permission_error naming it, well before the operation's own timeout.

#include <redcoord/lock/acl.hpp>
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/lock/fair_lock.hpp>
#include <redcoord/lock/redlock.hpp>
#include <redcoord/testing/local_server.hpp>

#include "../acl_support.hpp"

#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::expect_refused;
using redcoord::testing::expect_refused_any;
using redcoord::testing::local_server;
using redcoord::testing::make_acl_user;
using redcoord::testing::without_command;

namespace {

// `holder` (holding `held`) releases while `next` waits in acquire(): `next` gets the lock,
// woken by the release (the lock's channel), with a higher fencing token.
template <class Lock, class Acquisition>
void hand_over(Lock& holder, const Acquisition& held, Lock& next) {
    auto waiter = std::async(std::launch::async, [&] { return next.acquire(5s); });
    std::this_thread::sleep_for(100ms);
    EXPECT_TRUE(holder.release());
    auto got = waiter.get();
    ASSERT_TRUE(got);
    EXPECT_GT(got->fencing_token, held.fencing_token);
    EXPECT_TRUE(next.release());
}

// Single-instance scenarios: acquire/try/extend/release, fencing, a waiter woken by the
// release (SUBSCRIBE on the lock's channel), the watchdog.
void single_instance_scenarios(connection_pool& pool, connection_pool& other,
                               const std::string& prefix) {
    distributed_lock a(pool, "res", {.timing = {.ttl = 5s}, .prefix = prefix});
    auto got = a.acquire(0ms);
    ASSERT_TRUE(got);
    EXPECT_GE(got->fencing_token, 1u);
    EXPECT_TRUE(a.extend(5s));
    distributed_lock b(other, "res", {.timing = {.ttl = 5s}, .prefix = prefix});
    EXPECT_FALSE(b.try_lock());
    hand_over(a, *got, b);

    lock_options wd{.timing = {.ttl = 600ms}, .prefix = prefix};
    wd.watchdog = true;
    distributed_lock w(pool, "watched", wd);
    ASSERT_TRUE(w.try_lock());
    std::this_thread::sleep_for(1s);  // past the TTL: only the watchdog's extensions keep it
    EXPECT_TRUE(w.held());
    EXPECT_FALSE(w.lost());
    w.unlock();

    fair_lock f1(pool, "fair", {.timing = {.ttl = 5s}, .prefix = prefix});
    fair_lock f2(other, "fair", {.timing = {.ttl = 5s}, .prefix = prefix});
    auto held = f1.acquire(0ms);
    ASSERT_TRUE(held);
    hand_over(f1, *held, f2);
}

}  // namespace

TEST(LockAcl, EveryLockRunsAsUserWithExactlyTheLockRules) {
    local_server server;
    for (const std::string prefix : {std::string(default_prefix), std::string("app1:")}) {
        SCOPED_TRACE(prefix);
        const auto ep =
            make_acl_user(server, "lock_" + std::to_string(prefix.size()), lock_acl_needs(prefix));
        connection_pool pool(ep), other(ep);
        single_instance_scenarios(pool, other, prefix);
    }
}

TEST(LockAcl, UserCannotDoMoreThanTheRules) {
    local_server server;
    const auto ep = make_acl_user(server, "lock_limited", lock_acl_needs());
    connection_pool pool(ep);
    expect_refused("flushall", 2s, [&] { (void)pool.command({"FLUSHALL"}); });
    expect_refused("keys", 2s, [&] { (void)pool.command({"KEYS", "*"}); });
    // The default prefix's user may not touch another prefix's keys.
    distributed_lock other_prefix(pool, "res", {.prefix = "elsewhere:"});
    expect_refused_any({"eval", "evalsha"}, 2s, [&] { (void)other_prefix.try_lock(); });
}

TEST(LockAcl, ReplicatedLockAndReplicaLinksRunAsTheUser) {
    local_server master;
    auto replica = local_server::acknowledging_replica_of(master);
    // ACL users are not replicated: the pub/sub link on the replica logs in there too.
    const auto ep = make_acl_user(master, "lock_replicated", lock_acl_needs());
    (void)make_acl_user(*replica, "lock_replicated", lock_acl_needs());
    connection_pool pool(ep), other(ep);
    distributed_lock a(pool, "rep",
                       {.timing = {.ttl = 5s}, .replication = {.replicas = 1, .timeout = 2s}});
    ASSERT_TRUE(a.try_lock());
    distributed_lock b(other, "rep",
                       {.timing = {.ttl = 5s}, .replication = {.replicas = 1, .timeout = 2s}});
    auto waiter = std::async(std::launch::async, [&] { return b.acquire(5s); });
    std::this_thread::sleep_for(100ms);
    a.unlock();
    EXPECT_TRUE(waiter.get());
    EXPECT_TRUE(b.release());
}

TEST(LockAcl, RedlockRunsAsTheUserOnEveryNode) {
    std::vector<std::unique_ptr<local_server>> servers;
    std::vector<std::unique_ptr<connection_pool>> pools;
    std::vector<connection_pool*> nodes;
    for (int i = 0; i < 3; ++i) {
        servers.push_back(std::make_unique<local_server>());
        pools.push_back(std::make_unique<connection_pool>(
            make_acl_user(*servers.back(), "redlock_user", lock_acl_needs())));
        nodes.push_back(pools.back().get());
    }
    // A generous node_timeout: the first round may meet connections (TLS, a sanitizer
    // build) still being made, and acquire(0ms) has that one round only.
    redlock a(nodes, "rl", {.timing = {.ttl = 5s}, .node_timeout = 2s});
    redlock b(nodes, "rl", {.timing = {.ttl = 5s}, .node_timeout = 2s});
    auto got = a.acquire(0ms);
    ASSERT_TRUE(got);
    EXPECT_FALSE(b.try_lock());
    EXPECT_TRUE(a.extend(5s));
    auto waiter = std::async(std::launch::async, [&] { return b.acquire(5s); });
    std::this_thread::sleep_for(100ms);
    EXPECT_TRUE(a.release());
    auto next = waiter.get();
    ASSERT_TRUE(next);
    EXPECT_GT(next->fencing_token, got->fencing_token);
    EXPECT_TRUE(b.release());
}

// Each needed command in turn (the whole list: it is the part's exact rule set) is removed
// from the user; the first operation that needs it must fail with permission_error naming
// it within 2 s, while the operations wait up to 10 s.
TEST(LockAcl, MissingAnyNeededCommandIsPermissionErrorNamingIt) {
    local_server server;
    connection_pool admin(server.endpoint());
    const auto needs = lock_acl_needs();
    int n = 0;
    for (const auto& cmd : needs.commands) {
        SCOPED_TRACE(cmd);
        const auto ep =
            make_acl_user(server, "lock_no_" + std::to_string(n++), without_command(needs, cmd));
        connection_pool pool(ep);
        const std::string res = "miss-" + cmd;
        if (cmd == "role" || cmd == "unsubscribe") {
            // ROLE finds replicas for the pub/sub links (a master without replicas works without
            // it); UNSUBSCRIBE is sent when the last listener goes. Neither surfaces to a caller:
            // the lock still works.
            distributed_lock l(pool, res, {.timing = {.ttl = 5s}});
            ASSERT_TRUE(l.try_lock());
            l.unlock();
            continue;
        }
        if (cmd == "wait") {
            distributed_lock l(
                pool, res, {.timing = {.ttl = 10s}, .replication = {.replicas = 1, .timeout = 5s}});
            expect_refused(cmd, 2s, [&] { (void)l.try_lock(); });
            continue;
        }
        if (cmd == "subscribe") {
            // Needed by a waiter: held by someone else, the acquire subscribes to the release.
            distributed_lock holder(admin, res, {.timing = {.ttl = 20s}});
            ASSERT_TRUE(holder.try_lock());
            distributed_lock l(pool, res, {.timing = {.ttl = 5s}});
            expect_refused(cmd, 2s, [&] { (void)l.acquire(10s); });
            fair_lock fholder(admin, res + "-fair", {.timing = {.ttl = 20s}});
            ASSERT_TRUE(fholder.try_lock());
            fair_lock f(pool, res + "-fair", {.timing = {.ttl = 5s}});
            expect_refused(cmd, 2s, [&] { (void)f.acquire(10s); });
            continue;
        }
        if (cmd == "lpush") {
            // Only a fair lock's give-back (an acquisition granted after its waiter gave up)
            // pushes the waiter back to the head of the queue: not reachable on demand.
            continue;
        }
        // Everything else is needed by some step of: lock (EVAL), lock again on the same
        // connection (EVALSHA), extend, a waiter marking the holder (APPEND), release
        // (PUBLISH), and the fair lock's queue (a refused try_lock leaves it: LREM).
        expect_refused(cmd, 2500ms, [&] {
            // A 1 s TTL: a waiter left behind by a refused release gets the lock within it, so
            // the clean-up does not count against the bound.
            distributed_lock l(pool, res, {.timing = {.ttl = 1s}}),
                m(pool, res, {.timing = {.ttl = 1s}});
            for (int round = 0; round < 2; ++round) {
                if (!l.acquire(10s)) throw std::runtime_error("not acquired");
                (void)l.extend(1s);
                auto waiter = std::async(std::launch::async, [&] { return m.acquire(10s); });
                std::this_thread::sleep_for(50ms);
                if (!l.release()) throw std::runtime_error("not released");
                if (!waiter.get()) throw std::runtime_error("waiter not granted");
                if (!m.release()) throw std::runtime_error("not released");
            }
            fair_lock f(pool, res + "-fair", {.timing = {.ttl = 1s}}),
                g(pool, res + "-fair", {.timing = {.ttl = 1s}});
            for (int round = 0; round < 2; ++round) {
                if (!f.acquire(10s)) throw std::runtime_error("fair: not acquired");
                if (g.try_lock()) throw std::runtime_error("fair: granted twice");
                auto queued = std::async(std::launch::async, [&] { return g.acquire(10s); });
                std::this_thread::sleep_for(50ms);
                (void)f.extend(1s);
                if (!f.release()) throw std::runtime_error("fair: not released");
                if (!queued.get()) throw std::runtime_error("fair: queued waiter not granted");
                if (!g.release()) throw std::runtime_error("fair: not released");
            }
        });
    }
}

TEST(LockAcl, MissingKeyOrChannelPatternIsPermissionError) {
    local_server server;
    connection_pool admin(server.endpoint());
    auto no_keys = lock_acl_needs();
    no_keys.key_patterns.clear();
    connection_pool keyless(make_acl_user(server, "lock_no_keys", no_keys));
    distributed_lock k(keyless, "res", {.timing = {.ttl = 5s}});
    expect_refused("eval", 2s, [&] { (void)k.acquire(10s); });

    auto no_channels = lock_acl_needs();
    no_channels.channel_patterns.clear();
    connection_pool deaf(make_acl_user(server, "lock_no_channels", no_channels));
    distributed_lock holder(admin, "held", {.timing = {.ttl = 20s}});
    ASSERT_TRUE(holder.try_lock());
    distributed_lock c(deaf, "held", {.timing = {.ttl = 5s}});
    expect_refused("subscribe", 2s, [&] { (void)c.acquire(10s); });
}

TEST(LockAcl, RedlockWithRefusingMajorityIsPermissionErrorNotAWait) {
    std::vector<std::unique_ptr<local_server>> servers;
    std::vector<std::unique_ptr<connection_pool>> pools;
    std::vector<connection_pool*> nodes;
    for (int i = 0; i < 3; ++i) {
        servers.push_back(std::make_unique<local_server>());
        // Two of three nodes lack EVAL and EVALSHA.
        auto needs = lock_acl_needs();
        if (i > 0) needs = without_command(without_command(needs, "eval"), "evalsha");
        pools.push_back(std::make_unique<connection_pool>(
            make_acl_user(*servers.back(), "redlock_part", needs)));
        nodes.push_back(pools.back().get());
    }
    redlock a(nodes, "rl", {.timing = {.ttl = 5s}});
    expect_refused_any({"eval", "evalsha"}, 2s, [&] { (void)a.try_lock(); });
    expect_refused_any({"eval", "evalsha"}, 2s, [&] { (void)a.acquire(10s); });
    expect_refused_any({"eval", "evalsha"}, 2s, [&] { a.lock(); });
}
