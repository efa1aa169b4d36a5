// The runtime's clock and the timer service on it, without a server: advance() moves now()
// and the due times it reaches run at once, while time keeps running and nothing goes back.
#include <redcoord/core/detail/timer_service.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/core/runtime_clock.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <thread>

using namespace redcoord;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

using redcoord::testing::eventually;

TEST(RuntimeClock, ReadsTheSteadyClockUntilAdvanced) {
    runtime_clock c;
    EXPECT_EQ(c.offset(), runtime_clock::duration::zero());
    const auto before = steady::now();
    const auto t = c.now();
    EXPECT_GE(t, before);
    EXPECT_LE(t, steady::now());
}

TEST(RuntimeClock, AdvanceMovesNowForwardAndTimeKeepsRunning) {
    runtime_clock c;
    c.advance(1h);
    c.advance(30min);
    EXPECT_EQ(c.offset(), 90min);
    const auto before = steady::now();
    const auto t = c.now();
    EXPECT_GE(t, before + 90min);
    EXPECT_LE(t, steady::now() + 90min);
    const auto later = c.now();
    std::this_thread::sleep_for(2ms);
    EXPECT_GT(c.now(), later);  // not a frozen clock
}

TEST(RuntimeClock, ToSteadyIsTheSteadyInstantWhenTheClockReadsIt) {
    runtime_clock c;
    c.advance(10s);
    const auto t = c.now() + 5s;
    EXPECT_EQ(c.to_steady(t), t - 10s);
    EXPECT_EQ(c.from_steady(c.to_steady(t)), t);
    // "Never" stays never.
    EXPECT_EQ(c.to_steady(runtime_clock::time_point::max()), runtime_clock::time_point::max());
    EXPECT_EQ(c.from_steady(runtime_clock::time_point::max()), runtime_clock::time_point::max());
}

TEST(RuntimeClock, ANegativeAdvanceIsRefusedAndMovesNothing) {
    runtime_clock c;
    EXPECT_THROW(c.advance(-1ms), invalid_argument);
    EXPECT_EQ(c.offset(), runtime_clock::duration::zero());
    c.advance(0ms);
    EXPECT_EQ(c.offset(), runtime_clock::duration::zero());
}

TEST(RuntimeClock, ListenersHearEveryAdvanceUntilForgotten) {
    runtime_clock c;
    int heard = 0;
    const auto id = c.on_advance([&] { ++heard; });
    c.advance(1s);
    c.advance(1s);
    EXPECT_EQ(heard, 2);
    c.forget_advance(id);
    c.advance(1s);
    EXPECT_EQ(heard, 2);
}

TEST(RuntimeClock, ATimerDueInAnHourRunsAtOnceWhenTheClockIsAdvancedPastIt) {
    auto c = std::make_shared<runtime_clock>();
    detail::timer_service svc(nullptr, c);
    std::atomic<int> runs{0};
    std::atomic<std::int64_t> seen_offset{0};
    detail::timer t(svc, [&]() -> std::optional<detail::timer::time_point> {
        seen_offset = c->offset().count();
        ++runs;
        return std::nullopt;
    });
    t.arm(c->now() + 1h);
    // The service has a worker waiting for that due time by now; it must not run early.
    std::this_thread::sleep_for(30ms);
    EXPECT_EQ(runs.load(), 0);
    c->advance(59min);
    std::this_thread::sleep_for(30ms);
    EXPECT_EQ(runs.load(), 0) << "ran a minute before its due time";
    const auto advanced = steady::now();
    c->advance(1min);
    ASSERT_TRUE(eventually([&] { return runs.load() == 1; }));
    // Run by the advance, not by a sleep of an hour: well within a second of it.
    EXPECT_LT(steady::now() - advanced, 1s);
    EXPECT_EQ(runtime_clock::duration(seen_offset.load()), 1h);
}

TEST(RuntimeClock, ATickThatReturnsALaterTimeWaitsForTheNextAdvance) {
    auto c = std::make_shared<runtime_clock>();
    detail::timer_service svc(nullptr, c);
    std::atomic<int> runs{0};
    // A watchdog's shape: every ten minutes by the clock.
    detail::timer t(svc, [&]() -> std::optional<detail::timer::time_point> {
        ++runs;
        return c->now() + 10min;
    });
    t.arm(c->now());
    ASSERT_TRUE(eventually([&] { return runs.load() == 1; }));
    for (int i = 2; i <= 5; ++i) {
        c->advance(10min);
        ASSERT_TRUE(eventually([&] { return runs.load() == i; })) << "advance " << i - 1;
    }
    std::this_thread::sleep_for(30ms);
    EXPECT_EQ(runs.load(), 5);
}

TEST(RuntimeClock, EachRuntimeHasItsOwnClock) {
    auto a = runtime::create();
    auto b = runtime::create();
    EXPECT_EQ(&a->clock(), &a->timers().clock());
    a->clock().advance(1h);
    EXPECT_EQ(a->clock().offset(), 1h);
    EXPECT_EQ(b->clock().offset(), runtime_clock::duration::zero());
}

TEST(RuntimeClock, AfterAnAdvanceTheRestOfADueTimeRunsOutInRealTime) {
    auto c = std::make_shared<runtime_clock>();
    detail::timer_service svc(nullptr, c);
    std::atomic<int> runs{0};
    std::atomic<steady::rep> ran_at{0};
    detail::timer t(svc, [&]() -> std::optional<detail::timer::time_point> {
        ran_at = steady::now().time_since_epoch().count();
        ++runs;
        return std::nullopt;
    });
    const auto armed = steady::now();
    t.arm(c->now() + 1h);
    std::this_thread::sleep_for(20ms);  // a worker waits for the due time by now
    c->advance(1h - 100ms);
    // No further advance: the last 100 ms (from the arm) pass on the steady clock.
    ASSERT_TRUE(eventually([&] { return runs.load() == 1; }, 5s));
    const auto waited = steady::time_point(steady::duration(ran_at.load())) - armed;
    EXPECT_GE(waited, 99ms);
    EXPECT_LT(waited, 2s);
}
