// Review 2026-11-23 (queue/signaling/core), signaling findings: each test is named after the
// finding it locks in (C8, S1, S4, S6, S7, S8, keyspace hygiene).
#include <redcoord/core/errors.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/signaling/barrier.hpp>
#include <redcoord/signaling/double_barrier.hpp>
#include <redcoord/signaling/latch.hpp>
#include <redcoord/signaling/signal_hub.hpp>
#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <optional>
#include <thread>

using namespace std::chrono_literals;
using redcoord::testing::local_server;

namespace {

constexpr auto forever = std::chrono::milliseconds::max();

class Findings : public ::testing::Test {
protected:
    local_server master;
    redcoord::connection_pool pool{master.endpoint()};
    redcoord::signal_hub hub{pool};

    // Runs `wait` on a thread, calls `release` after 300 ms, and expects `wait` to have
    // blocked until then and finished successfully soon after.
    static void blocks_until_released(const std::function<void()>& wait,
                                      const std::function<void()>& release) {
        const auto start = std::chrono::steady_clock::now();
        auto done = std::async(std::launch::async, [&] {
            EXPECT_NO_THROW(wait());
            return std::chrono::steady_clock::now() - start;
        });
        std::this_thread::sleep_for(300ms);
        ASSERT_NE(done.wait_for(0ms), std::future_status::ready) << "returned before the release";
        release();
        ASSERT_EQ(done.wait_for(5s), std::future_status::ready)
            << "still waiting after the release";
        EXPECT_GE(done.get(), 290ms);
    }
};

// ---- C8: "forever" waits never overflow into "already expired" ----

TEST_F(Findings, C8_WaiterWaitMaxWaits) {
    auto w = hub.listen({"c8"});
    blocks_until_released(
        [&] {
            auto s = w.wait(forever);
            ASSERT_TRUE(s);
            EXPECT_EQ(s->payload, "go");
        },
        [&] { hub.broadcast("c8", "go"); });
}

TEST_F(Findings, C8_HubWaitAndWaitAllMaxWait) {
    blocks_until_released([&] { EXPECT_TRUE(hub.wait("c8one", forever)); },
                          [&] {
                              for (int i = 0; i < 200 && hub.broadcast("c8one", "x") == 0; ++i)
                                  std::this_thread::sleep_for(5ms);
                          });
    blocks_until_released(
        [&] {
            EXPECT_TRUE(hub.wait_all({"c8a", "c8b"}, forever));
        },
        [&] {
            for (int i = 0; i < 200 && hub.broadcast("c8a", "x") == 0; ++i)
                std::this_thread::sleep_for(5ms);
            hub.broadcast("c8b", "y");
        });
}

TEST_F(Findings, C8_BarrierArriveAndWaitMaxWaits) {
    redcoord::barrier a(hub, "c8b", 2), b(hub, "c8b", 2);
    blocks_until_released([&] { EXPECT_EQ(a.arrive_and_wait(forever), 0u); },
                          [&] { EXPECT_EQ(b.arrive_and_wait(forever), 0u); });
}

TEST_F(Findings, C8_LatchWaitMaxWaits) {
    redcoord::latch l(hub, "c8l", 1);
    blocks_until_released([&] { EXPECT_TRUE(l.wait(forever)); }, [&] { l.count_down(); });
}

TEST_F(Findings, C8_DoubleBarrierMaxWaits) {
    redcoord::double_barrier a(hub, "c8d", 2), b(hub, "c8d", 2);
    blocks_until_released([&] { a.enter(forever); }, [&] { b.enter(forever); });
    blocks_until_released([&] { a.leave(forever); }, [&] { b.leave(forever); });
}

// ---- S1: a double barrier's members keep their leases while inside ----

TEST_F(Findings, S1_SlowMemberInsideKeepsItsLease) {
    // The work between enter() and leave() lasts five leases: the member must still count,
    // so the fast member's leave() waits for it.
    redcoord::barrier_options o{.arrival_lease = 200ms};
    redcoord::double_barrier fast(hub, "s1slow", 2, o), slow(hub, "s1slow", 2, o);
    std::thread t([&] { EXPECT_NO_THROW(fast.enter(5s)); });
    slow.enter(5s);
    t.join();
    std::atomic<bool> slow_left{false};
    std::thread f([&] {
        EXPECT_NO_THROW(fast.leave(10s));
        EXPECT_TRUE(slow_left.load()) << "the round ended while a member was still inside";
    });
    std::this_thread::sleep_for(1000ms);
    slow_left = true;
    slow.leave(5s);
    f.join();
}

TEST_F(Findings, S1_ResetClearsAnIdleDoubleBarrierButNotALiveOne) {
    redcoord::double_barrier a(hub, "s1reset", 1);
    a.enter(2s);
    EXPECT_FALSE(a.reset());  // a live member is inside
    a.leave(2s);
    EXPECT_TRUE(a.reset());
    EXPECT_EQ(master.command({"EXISTS", "redcoord:double_barrier:{s1reset}"}).integer(), 0);
    redcoord::double_barrier three(hub, "s1reset", 3);  // parties can change after a reset
    EXPECT_THROW(three.enter(100ms), redcoord::barrier_timeout);
}

// ---- S8: reset() is guarded and documented ----

TEST_F(Findings, S8_ResetDoesNotPullTheRugFromAWaitingMember) {
    redcoord::barrier b(hub, "s8", 2);
    std::optional<std::uint64_t> passed;
    std::thread t([&] { EXPECT_NO_THROW(passed = b.arrive_and_wait(10s)); });
    for (int i = 0; i < 500 && b.arrived() < 1; ++i) std::this_thread::sleep_for(5ms);
    ASSERT_EQ(b.arrived(), 1u);
    b.reset();                   // refused: somebody is waiting
    EXPECT_EQ(b.arrived(), 1u);  // ... so the arrival still counts
    redcoord::barrier other(hub, "s8", 2);
    EXPECT_EQ(other.arrive_and_wait(2s), 0u);
    t.join();
    ASSERT_TRUE(passed);
    EXPECT_EQ(*passed, 0u);
}

// ---- Issue 34 C11: a forced reset drops the waiting members, who are told ----

TEST_F(Findings, C11_ForceResetDropsWaitingMembersWhoGetLeaseLost) {
    // Leases refreshed every 10 s: only the reset's own wake-up can end the waits sooner.
    redcoord::barrier b(hub, "c11", 3, {.arrival_lease = 30s});
    std::atomic<int> lost{0};
    std::vector<std::thread> waiters;
    for (int i = 0; i < 2; ++i)
        waiters.emplace_back([&] {
            try {
                (void)b.arrive_and_wait(20s);
            } catch (const redcoord::barrier_lease_lost&) {
                ++lost;
            }
        });
    for (int i = 0; i < 1000 && b.arrived() < 2; ++i) std::this_thread::sleep_for(5ms);
    ASSERT_EQ(b.arrived(), 2u);
    EXPECT_FALSE(b.reset());
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(b.force_reset(), 2u);
    for (auto& t : waiters) t.join();
    EXPECT_EQ(lost.load(), 2);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 8s);
    EXPECT_EQ(b.arrived(), 0u);
    // The party count is gone: another count can start the barrier afresh, and it passes.
    redcoord::barrier one(hub, "c11", 1);
    EXPECT_NO_THROW((void)one.arrive_and_wait(2s));
    EXPECT_EQ(redcoord::barrier(hub, "c11idle", 2).force_reset(), 0u);
}

// ---- S4: one envelope on two channels is two deliveries ----

TEST_F(Findings, S4_OneEnvelopeOnTwoChannelsReachesBoth) {
    auto w = hub.listen({"s4a", "s4b"});
    const std::string env = hub.envelope("both");
    master.command(
        {"EVAL", "redis.call('PUBLISH', KEYS[1], ARGV[1]) redis.call('PUBLISH', KEYS[2], ARGV[1])",
         "2", "s4a", "s4b", env});
    auto a = w.wait(3s), b = w.wait(3s);
    ASSERT_TRUE(a);
    ASSERT_TRUE(b) << "the second channel's delivery was dropped as a duplicate";
    EXPECT_NE(a->channel, b->channel);
}

// ---- S7: latch counts stay exact ----

TEST_F(Findings, S7_LatchCountsAreExactUpToTwoToThe53) {
    constexpr std::uint64_t top = std::uint64_t{1} << 53;
    redcoord::latch l(hub, "s7", top);
    EXPECT_EQ(l.count(), top);
    EXPECT_EQ(l.count_down(), top - 1);
    EXPECT_EQ(l.count(), top - 1);
    EXPECT_THROW(l.count_down(top + 1), redcoord::invalid_argument);
    EXPECT_THROW(l.reset(top + 1), redcoord::invalid_argument);
    EXPECT_EQ(l.count_down(top), 0u);  // not below zero
    master.command({"SET", "redcoord:latch:{s7}", "-5"});
    EXPECT_THROW((void)l.count(), redcoord::protocol_error);  // not 2^64 - 5
}

// ---- Keyspace hygiene: nothing without a TTL is left behind ----

TEST_F(Findings, KeyspaceHygiene_NoKeyWithoutTtlAfterUse) {
    for (int i = 0; i < 1000; ++i) {
        redcoord::barrier b(hub, "job-" + std::to_string(i), 1);
        ASSERT_EQ(b.arrive_and_wait(2s), 0u);
    }
    for (int i = 0; i < 20; ++i) {
        const std::string name = "pair-" + std::to_string(i);
        redcoord::barrier a(hub, name, 2), b(hub, name, 2);
        std::thread t([&] { EXPECT_NO_THROW((void)a.arrive_and_wait(5s)); });
        (void)b.arrive_and_wait(5s);
        t.join();
    }
    for (int i = 0; i < 50; ++i) {
        redcoord::latch l(hub, "latch-" + std::to_string(i), 2);
        l.count_down(2);
        EXPECT_TRUE(l.wait(1s));
    }
    for (int i = 0; i < 50; ++i) {
        redcoord::double_barrier d(hub, "round-" + std::to_string(i), 1);
        d.enter(2s);
        d.leave(2s);
    }
    EXPECT_EQ(master.keys_without_ttl(), std::vector<std::string>{});
    EXPECT_GE(master.command({"DBSIZE"}).integer(), 1000);  // the state keys are there, with TTLs
}

// ---- S6: listen_unicast() returns once the master has the channel ----

TEST(FindingsWithReplica, S6_ListenUnicastWaitsForTheMasterLink) {
    local_server master;
    auto replica = local_server::replica_of(master);
    redcoord::connection_pool pool(master.endpoint());
    redcoord::signal_hub hub(pool, {replica->endpoint()});
    for (int i = 0; i < 500 && hub.connected_links() < 2; ++i) std::this_thread::sleep_for(10ms);
    ASSERT_EQ(hub.connected_links(), 2u);
    // The master answers nobody for 400 ms; the replica confirms the subscription at once.
    master.command({"CLIENT", "PAUSE", "400", "ALL"});
    const auto start = std::chrono::steady_clock::now();
    auto w = hub.listen_unicast("s6");
    EXPECT_GE(std::chrono::steady_clock::now() - start, 300ms)
        << "returned on the replica's confirmation alone";
    EXPECT_TRUE(hub.unicast("s6", "you"));
    auto s = w.wait(3s);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->payload, "you");
}

}  // namespace
