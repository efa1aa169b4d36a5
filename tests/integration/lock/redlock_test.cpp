// redlock over 5 real masters: the algorithm's observable steps.

#include <redcoord/core/holder_label.hpp>
#include <redcoord/lock/redlock.hpp>
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
struct five {
    std::vector<std::unique_ptr<local_server>> servers = redcoord::testing::start_masters(5);
    std::vector<std::unique_ptr<connection_pool>> pools;
    std::vector<connection_pool*> nodes;
    five() {
        for (auto& s : servers) {
            pools.push_back(std::make_unique<connection_pool>(s->endpoint()));
            nodes.push_back(pools.back().get());
            // Connected up front: a first round would also connect within node_timeout
            // (50 ms), which a loaded sanitizer build can exceed (see redlock.hpp).
            (void)pools.back()->command({"PING"});
        }
    }
    int holding(const std::string& key, const std::string& token) {
        int n = 0;
        for (auto& s : servers) {
            auto v = s->command({"GET", key});
            if (!v.is_nil() && v.text() == token) ++n;
        }
        return n;
    }
};
}  // namespace

TEST(Redlock, SameKeyAndTokenOnEveryNodeAndReleaseClearsAll) {
    five f;
    redlock a(f.nodes, "res", {.timing = {.ttl = 10s}});
    auto got = a.acquire(0ms);
    ASSERT_TRUE(got);
    // 40 random hex digits, then the holder label (this process's <host>:<pid> by default).
    EXPECT_EQ(got->token.size(), 41u + default_holder_label().size());
    EXPECT_EQ(holder_label_of(got->token), default_holder_label());
    EXPECT_GT(got->remaining(), 9s);
    EXPECT_LE(got->remaining(), 10s - 100ms);  // drift: 10 s * 0.01 + 2 ms
    // Decided at a majority; the rest were sent at the same time and land right after.
    std::this_thread::sleep_for(50ms);
    EXPECT_EQ(f.holding(a.key(), got->token), 5);
    for (auto& s : f.servers) {
        auto pttl = s->command({"PTTL", a.key()}).integer();
        EXPECT_GT(pttl, 9000);
    }
    redlock b(f.nodes, "res", {.timing = {.ttl = 10s}});
    EXPECT_FALSE(b.try_lock());
    // The loser unlocked what it got (nothing here) and left the holder's keys alone.
    EXPECT_EQ(f.holding(a.key(), got->token), 5);
    auto outs = b.last_outcomes();
    ASSERT_EQ(outs.size(), 5u);
    int refused = 0;
    for (auto& o : outs)
        if (o.state == node_outcome::status::no) {
            ++refused;
            EXPECT_GT(o.pttl, 0);
        }
    EXPECT_GE(refused, 3);
    EXPECT_TRUE(a.release());
    std::this_thread::sleep_for(50ms);
    for (auto& s : f.servers) EXPECT_TRUE(s->command({"GET", a.key()}).is_nil());
    EXPECT_TRUE(b.try_lock());
    b.unlock();
}

TEST(Redlock, PartialHoldingsAreUnlockedEverywhere) {
    five f;
    // Someone else holds the key on 3 nodes: we can get at most 2, which is not a majority,
    // so our partial keys must be removed at once.
    for (int i = 0; i < 3; ++i)
        f.servers[i]->command({"SET", "redcoord:lock:{p}", "other", "PX", "30000"});
    redlock a(f.nodes, "p");
    EXPECT_FALSE(a.try_lock());
    std::this_thread::sleep_for(50ms);
    for (int i = 3; i < 5; ++i)
        EXPECT_TRUE(f.servers[i]->command({"GET", "redcoord:lock:{p}"}).is_nil());
    for (int i = 0; i < 3; ++i)
        EXPECT_EQ(f.servers[i]->command({"GET", "redcoord:lock:{p}"}).text(), "other");
}

TEST(Redlock, FencingTokensIncreaseAcrossHolders) {
    five f;
    redlock a(f.nodes, "fence"), b(f.nodes, "fence");
    std::uint64_t last = 0;
    for (int i = 0; i < 20; ++i) {
        auto& l = (i % 2) ? a : b;
        auto got = l.acquire(2s);
        ASSERT_TRUE(got);
        EXPECT_GT(got->fencing_token, last);
        last = got->fencing_token;
        EXPECT_TRUE(l.release());
    }
    // Counters that drifted apart (a node missed acquisitions) are raised on release, so the
    // next token still exceeds every token handed out before.
    f.servers[0]->command({"SET", "redcoord:lock:{fence}:fence", "1000"});
    auto got = a.acquire(2s);
    ASSERT_TRUE(got);
    EXPECT_GT(got->fencing_token, last);
    last = got->fencing_token;
    ASSERT_TRUE(a.release());
    for (auto& s : f.servers) s->command({"DEL", "dummy"});
    for (int i = 1; i < 5; ++i)
        EXPECT_GE(std::stoull(f.servers[i]->command({"GET", "redcoord:lock:{fence}:fence"}).text()),
                  last);
}

TEST(Redlock, WaiterWakesOnReleaseWithoutPolling) {
    five f;
    redlock holder(f.nodes, "wake", {.timing = {.ttl = 30s}});
    redlock waiter(f.nodes, "wake", {.timing = {.ttl = 30s}});
    ASSERT_TRUE(holder.acquire(0ms));
    std::int64_t before = 0;
    for (auto& s : f.servers) before += s->command_calls("eval");
    auto fut = std::async(std::launch::async, [&] { return waiter.acquire(20s); });
    std::this_thread::sleep_for(1500ms);
    ASSERT_EQ(fut.wait_for(0ms), std::future_status::timeout);
    EXPECT_TRUE(holder.release());
    auto got = fut.get();
    ASSERT_TRUE(got);
    std::int64_t after = 0;
    for (auto& s : f.servers) after += s->command_calls("eval");
    // Each attempt is one acquire (+ one unlock when refused) per node; a 5 ms poller would
    // make ~3000 calls in 1.5 s. The release itself is 5 more; a loaded machine may add a
    // re-check or two after a slow subscriber link, hence the margin.
    EXPECT_LE(after - before, 5 * 12) << "waiter polled";
    waiter.unlock();
}

TEST(Redlock, ExtendNeedsAMajorityAndFailsAfterExpiry) {
    five f;
    redlock a(f.nodes, "ext", {.timing = {.ttl = 300ms}, .max_extensions = 5});
    auto got = a.acquire(0ms);
    ASSERT_TRUE(got);
    EXPECT_TRUE(a.extend(5s));
    EXPECT_GT(a.current()->remaining(), 4s);
    // Steal the key on 3 nodes: the next extension lacks a majority and reports loss.
    for (int i = 0; i < 3; ++i) f.servers[i]->command({"SET", a.key(), "thief"});
    std::atomic<bool> fired{false};
    const auto lost_slot = a.on_lost([&](const std::string&) { fired = true; });
    EXPECT_FALSE(a.extend());
    EXPECT_TRUE(a.lost());
    // The slot runs on the callback executor, soon after extend() found the loss.
    EXPECT_TRUE(redcoord::testing::eventually([&] { return fired.load(); }, 5s));
    EXPECT_THROW(a.check_held(), lock_lost);
    EXPECT_FALSE(a.release());  // 3 of 5 no longer ours: false, the thief's keys stay
    for (int i = 0; i < 3; ++i) EXPECT_EQ(f.servers[i]->command({"GET", a.key()}).text(), "thief");

    redlock b(f.nodes, "ext2", {.timing = {.ttl = 200ms}});
    ASSERT_TRUE(b.acquire(0ms));
    std::this_thread::sleep_for(300ms);
    EXPECT_FALSE(b.extend());  // validity passed: no extension, even if keys were there
    EXPECT_TRUE(b.lost());
}

TEST(Redlock, WatchdogKeepsTheLockAcrossTenTtls) {
    five f;
    redlock a(f.nodes, "dog", {.timing = {.ttl = 300ms}, .watchdog = true, .max_extensions = 1000});
    redlock b(f.nodes, "dog", {.timing = {.ttl = 300ms}});
    ASSERT_TRUE(a.acquire(0ms));
    const auto until = std::chrono::steady_clock::now() + 3s;
    while (std::chrono::steady_clock::now() < until) {
        EXPECT_FALSE(b.try_lock());
        std::this_thread::sleep_for(100ms);
    }
    EXPECT_FALSE(a.lost());
    EXPECT_TRUE(a.release());
}
