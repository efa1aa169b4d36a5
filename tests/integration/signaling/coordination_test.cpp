// barrier, double_barrier and latch: state in keys, signals only wake (docs/signaling.md).
#include <redcoord/core/errors.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/signaling/barrier.hpp>
#include <redcoord/signaling/double_barrier.hpp>
#include <redcoord/signaling/latch.hpp>
#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <thread>

using namespace std::chrono_literals;
using redcoord::testing::local_server;

namespace {

class Coordination : public ::testing::Test {
protected:
    local_server master;
    redcoord::connection_pool pool{master.endpoint()};
    redcoord::signal_hub hub{pool};
};

TEST_F(Coordination, BarrierLetsAllPassTogetherAndIsReusable) {
    constexpr int parties = 4, rounds = 20;
    std::atomic<int> arrived{0};
    std::atomic<int> early{0};
    std::vector<std::thread> ts;
    redcoord::barrier shared(hub, "b1", parties);
    for (int p = 0; p < parties; ++p) {
        ts.emplace_back([&, p] {
            // Half the parties use the shared object, half their own: both are supported.
            redcoord::barrier own(hub, "b1", parties);
            auto& b = p % 2 ? shared : own;
            for (int r = 0; r < rounds; ++r) {
                ++arrived;
                auto gen = b.arrive_and_wait(10000ms);
                // Nobody passes round r before every party has arrived for it.
                if (arrived.load() < parties * (r + 1)) ++early;
                EXPECT_EQ(gen, static_cast<std::uint64_t>(r));
            }
        });
    }
    for (auto& t : ts) t.join();
    EXPECT_EQ(early.load(), 0);
    EXPECT_EQ(shared.generation(), static_cast<std::uint64_t>(rounds));
    EXPECT_EQ(shared.arrived(), 0u);
}

TEST_F(Coordination, BarrierTimeoutNamesArrivalsAndWithdraws) {
    redcoord::barrier b(hub, "lonely", 3);
    try {
        (void)b.arrive_and_wait(300ms);
        FAIL() << "should have timed out";
    } catch (const redcoord::barrier_timeout& e) {
        EXPECT_EQ(e.arrived(), 1u);
        EXPECT_EQ(e.parties(), 3u);
        EXPECT_NE(std::string(e.what()).find("1 of 3"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("lonely"), std::string::npos) << e.what();
    }
    // Withdrawn: two more arrivals do not complete the generation.
    EXPECT_EQ(b.arrived(), 0u);
    std::thread t([&] { EXPECT_THROW((void)b.arrive_and_wait(500ms), redcoord::barrier_timeout); });
    EXPECT_THROW((void)b.arrive_and_wait(500ms), redcoord::timeout_error);
    t.join();
    EXPECT_EQ(b.generation(), 0u);
}

TEST_F(Coordination, BarrierRejectsBadInput) {
    EXPECT_THROW(redcoord::barrier(hub, "", 2), redcoord::invalid_argument);
    EXPECT_THROW(redcoord::barrier(hub, "x", 0), redcoord::invalid_argument);
    EXPECT_THROW(redcoord::barrier(hub, "x", 2, {.arrival_lease = 1ms}),
                 redcoord::invalid_argument);
    redcoord::barrier two(hub, "mismatch", 2);
    std::thread t(
        [&] { EXPECT_THROW((void)two.arrive_and_wait(300ms), redcoord::barrier_timeout); });
    std::this_thread::sleep_for(100ms);
    redcoord::barrier three(hub, "mismatch", 3);
    EXPECT_THROW((void)three.arrive_and_wait(300ms), redcoord::invalid_argument);
    t.join();
    // Glob characters in a name are fine: names are keys, not patterns.
    redcoord::barrier glob(hub, "g*[x]?", 1);
    EXPECT_EQ(glob.arrive_and_wait(1000ms), 0u);
}

TEST_F(Coordination, BarrierNeverMissesAWakeLostWithTheLink) {
    // A waits; its pub/sub link is killed and stays down for 500 ms (reconnect_min) while B
    // completes the generation, so A's wake is lost for sure. The key state is not: A's
    // periodic re-read (arrival_lease / 3) finds the new generation.
    redcoord::signal_options slow;
    slow.link.reconnect_min = 500ms;
    slow.link.reconnect_max = 500ms;
    redcoord::signal_hub a_hub(pool, {}, slow);
    redcoord::barrier_options o{.arrival_lease = 300ms};
    redcoord::barrier a(a_hub, "lossy", 2, o);
    std::optional<std::uint64_t> passed;
    std::thread t([&] { passed = a.arrive_and_wait(10000ms); });
    for (int i = 0; i < 500 && a.arrived() < 1; ++i) std::this_thread::sleep_for(5ms);
    ASSERT_EQ(a.arrived(), 1u);
    master.command({"CLIENT", "KILL", "TYPE", "pubsub"});
    redcoord::signal_hub other(pool);  // connects after the kill
    redcoord::barrier b(other, "lossy", 2, o);
    EXPECT_EQ(b.arrive_and_wait(1000ms), 0u);  // the last arriver passes at once
    t.join();
    ASSERT_TRUE(passed);
    EXPECT_EQ(*passed, 0u);
    EXPECT_EQ(a_hub.stats().received, 0u) << "the wake was not lost; this test proved nothing";
}

TEST_F(Coordination, LatchOpenedBeforeTheWaitIsNotMissed) {
    redcoord::latch l(hub, "early", 2);
    EXPECT_EQ(l.count(), 2u);
    EXPECT_EQ(l.count_down(), 1u);
    EXPECT_EQ(l.count_down(), 0u);
    EXPECT_EQ(l.count_down(), 0u);  // stays open, never negative
    // Its signal went out before anyone subscribed; the key still says open.
    EXPECT_TRUE(l.wait(0ms));
    redcoord::latch again(hub, "early", 5);  // an existing latch keeps its count
    EXPECT_TRUE(again.wait(100ms));
}

TEST_F(Coordination, LatchWakesWaitersAndTimesOut) {
    redcoord::latch l(hub, "three", 3);
    EXPECT_FALSE(l.wait(200ms));
    std::atomic<int> opened{0};
    std::vector<std::thread> ts;
    for (int i = 0; i < 3; ++i)
        ts.emplace_back([&] {
            redcoord::latch mine(hub, "three", 3);
            if (mine.wait(10000ms)) ++opened;
        });
    std::this_thread::sleep_for(100ms);
    l.count_down();
    EXPECT_EQ(l.count_down(2), 0u);
    for (auto& t : ts) t.join();
    EXPECT_EQ(opened.load(), 3);
    EXPECT_THROW(l.count_down(0), redcoord::invalid_argument);
    l.reset(1);
    EXPECT_FALSE(l.wait(50ms));
    master.command({"DEL", "redcoord:latch:{three}"});
    EXPECT_THROW(l.count_down(), redcoord::error);
    EXPECT_THROW(redcoord::latch(hub, "", 1), redcoord::invalid_argument);
}

TEST_F(Coordination, DoubleBarrierEntersTogetherAndLeavesTogether) {
    constexpr int parties = 3, rounds = 3;
    std::atomic<int> entered{0}, left{0}, bad{0};
    std::vector<std::thread> ts;
    for (int p = 0; p < parties; ++p)
        ts.emplace_back([&] {
            redcoord::double_barrier db(hub, "db", parties);
            for (int r = 0; r < rounds; ++r) {
                ++entered;
                db.enter(10000ms);
                if (entered.load() < parties * (r + 1)) ++bad;
                EXPECT_TRUE(db.inside());
                ++left;
                db.leave(10000ms);
                if (left.load() < parties * (r + 1)) ++bad;
                EXPECT_FALSE(db.inside());
            }
        });
    for (auto& t : ts) t.join();
    EXPECT_EQ(bad.load(), 0);
}

// Issue 39 item 3: calling enter() twice or leave() first is the caller's mistake, a
// usage_error (the CLI's exit 2), not a server or I/O error; it changes nothing on the server.
TEST_F(Coordination, DoubleBarrierMisuseIsAUsageError) {
    redcoord::double_barrier db(hub, "misuse", 1);
    EXPECT_THROW(db.leave(1000ms), redcoord::usage_error);
    db.enter(5000ms);
    EXPECT_THROW(db.enter(1000ms), redcoord::usage_error);
    EXPECT_TRUE(db.inside());
    db.leave(5000ms);
    EXPECT_THROW(db.leave(1000ms), redcoord::usage_error);
    EXPECT_FALSE(db.inside());
}

TEST_F(Coordination, DoubleBarrierTimeouts) {
    redcoord::double_barrier a(hub, "dbt", 2);
    try {
        a.enter(200ms);
        FAIL();
    } catch (const redcoord::barrier_timeout& e) {
        EXPECT_EQ(e.arrived(), 1u);
        EXPECT_NE(std::string(e.what()).find("1 of 2"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(a.inside());
    EXPECT_THROW(a.leave(10ms), redcoord::error);  // not inside
    redcoord::double_barrier b(hub, "dbt", 2);
    std::thread t([&] { b.enter(5000ms); });
    a.enter(5000ms);
    t.join();
    // b never leaves: a's leave times out naming who is still inside.
    try {
        a.leave(200ms);
        FAIL();
    } catch (const redcoord::barrier_timeout& e) {
        EXPECT_EQ(e.arrived(), 1u);
        EXPECT_NE(std::string(e.what()).find("still inside"), std::string::npos) << e.what();
    }
    b.leave(2000ms);  // the last one out completes the round
}

}  // namespace
