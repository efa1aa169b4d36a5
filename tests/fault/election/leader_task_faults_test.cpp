// leader_task under a paused Redis while the application's own slots are slow (review M3).
#include <redcoord/election/leader_task.hpp>
#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

using namespace redcoord;
using namespace std::chrono_literals;
using redcoord::testing::local_server;
using clk = std::chrono::steady_clock;

// A user `elected` slot doing long start-up work occupies the callback thread; leadership
// expires meanwhile (the server is paused, so no renewal is confirmed). The task's stop token
// must fire by the local deadline, not when the slot returns.
TEST(LeaderTaskFaults, M3_SlowElectedSlotDoesNotDelayStop) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    const auto term = 600ms;
    std::atomic<bool> in_slot{false}, started{false};
    std::atomic<clk::rep> stopped_at{0};
    election_options o;
    o.identity = "slow-slot";
    o.term = term;
    leader_elector e(pool, "m3_slow", o);
    const auto slow_slot = e.on_elected([&](std::uint64_t) {
        in_slot = true;
        std::this_thread::sleep_for(4 * term);  // far longer than the term
    });
    leader_task t(e, 5ms, [&](std::uint64_t, std::stop_token st) {
        started = true;
        const auto until = clk::now() + 8s;
        while (!st.stop_requested() && clk::now() < until) std::this_thread::sleep_for(1ms);
        if (st.stop_requested()) stopped_at = clk::now().time_since_epoch().count();
    });
    e.start();
    for (int i = 0; i < 300 && !(started && in_slot); ++i) std::this_thread::sleep_for(10ms);
    ASSERT_TRUE(started && in_slot);
    const auto paused_at = clk::now();
    srv.pause();
    for (int i = 0; i < 500 && stopped_at == 0; ++i) std::this_thread::sleep_for(10ms);
    srv.resume();
    ASSERT_NE(stopped_at.load(), 0) << "the stop token never fired";
    const auto took = clk::time_point(clk::duration(stopped_at.load())) - paused_at;
    // The deadline is at most `term - drift` after the pause; slack for a loaded machine.
    EXPECT_LT(took, term + 300ms)
        << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
    t.stop();
    e.stop();
}
