// The runtime's timer service, without a server: order, re-arming, disarming, the
// destructor's promise that no tick runs once it returns, and a blocked tick holding up only
// its own timer.
#include <redcoord/core/detail/timer_service.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <vector>

using namespace redcoord::detail;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

using redcoord::testing::eventually;

TEST(TimerService, TicksRunInDueOrderOnOneThread) {
    timer_service svc;
    std::mutex mu;
    std::vector<int> order;
    std::vector<std::thread::id> threads;
    std::vector<std::unique_ptr<timer>> timers;
    const auto base = clock_type::now() + 20ms;
    for (int i = 0; i < 8; ++i) {
        timers.push_back(std::make_unique<timer>(svc, [&, i]() -> std::optional<timer::time_point> {
            std::lock_guard l(mu);
            order.push_back(i);
            threads.push_back(std::this_thread::get_id());
            return std::nullopt;
        }));
    }
    // Armed in reverse: the service orders by due time, not by arm order.
    for (int i = 7; i >= 0; --i) timers[i]->arm(base + std::chrono::milliseconds(i));
    ASSERT_TRUE(eventually([&] {
        std::lock_guard l(mu);
        return order.size() == 8;
    }));
    std::lock_guard l(mu);
    EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
    for (auto id : threads) EXPECT_EQ(id, threads.front());
    EXPECT_NE(threads.front(), std::this_thread::get_id());
}

TEST(TimerService, ATickReturnsItsNextDueTimeUntilItStops) {
    timer_service svc;
    std::atomic<int> runs{0};
    timer t(svc, [&]() -> std::optional<timer::time_point> {
        if (++runs == 5) return std::nullopt;
        return clock_type::now() + 1ms;
    });
    t.arm(clock_type::now());
    ASSERT_TRUE(eventually([&] { return runs.load() == 5 && !t.armed(); }));
    std::this_thread::sleep_for(20ms);
    EXPECT_EQ(runs.load(), 5);
}

TEST(TimerService, DisarmedTimerNeverFires) {
    timer_service svc;
    std::atomic<int> runs{0};
    timer t(svc, [&]() -> std::optional<timer::time_point> {
        ++runs;
        return std::nullopt;
    });
    t.arm(clock_type::now() + 30ms);
    t.disarm();
    EXPECT_FALSE(t.armed());
    std::this_thread::sleep_for(60ms);
    EXPECT_EQ(runs.load(), 0);
}

TEST(TimerService, ArmDuringTheTickOverridesTheReturnedTime) {
    timer_service svc;
    std::atomic<int> runs{0};
    timer* self = nullptr;
    timer t(svc, [&]() -> std::optional<timer::time_point> {
        if (++runs == 1) {
            self->arm(clock_type::now() + 5ms);  // wins over the far time returned below
            return clock_type::now() + 1h;
        }
        return std::nullopt;
    });
    self = &t;
    t.arm(clock_type::now());
    EXPECT_TRUE(eventually([&] { return runs.load() == 2; }));
}

TEST(TimerService, DestructorWaitsForTheRunningTickAndNoTickRunsAfterIt) {
    timer_service svc;
    std::atomic<bool> in_tick{false}, after{false};
    std::atomic<int> runs_after_destroy{0};
    auto t = std::make_unique<timer>(svc, [&]() -> std::optional<timer::time_point> {
        if (after) ++runs_after_destroy;
        in_tick = true;
        std::this_thread::sleep_for(50ms);
        in_tick = false;
        return clock_type::now();
    });
    t->arm(clock_type::now());
    ASSERT_TRUE(eventually([&] { return in_tick.load(); }));
    t.reset();  // must wait the ~50 ms tick out
    EXPECT_FALSE(in_tick.load());
    after = true;
    std::this_thread::sleep_for(30ms);
    EXPECT_EQ(runs_after_destroy.load(), 0);
}

TEST(TimerService, ATickMayDestroyItsOwnTimer) {
    timer_service svc;
    std::atomic<bool> done{false}, armed{false};
    std::unique_ptr<timer> t;
    t = std::make_unique<timer>(svc, [&]() -> std::optional<timer::time_point> {
        while (!armed) std::this_thread::yield();  // `t` is not the test's to touch after this
        t.reset();  // from inside its own tick: must not wait for itself
        done = true;
        return std::nullopt;
    });
    t->arm(clock_type::now());
    armed = true;
    EXPECT_TRUE(eventually([&] { return done.load(); }));
}

// A tick that blocks (as one waiting on a stalled server does) holds up only its own timer:
// another timer's ticks keep their due times, run by another worker. One worker alone (the
// single timer thread this replaced) would have run them 1 s late.
TEST(TimerService, ABlockedTickDelaysNoOtherTimer) {
    timer_service svc;
    std::atomic<bool> release{false}, blocking{false};
    timer blocked(svc, [&]() -> std::optional<timer::time_point> {
        blocking = true;
        const auto until = clock_type::now() + 5s;
        while (!release && clock_type::now() < until) std::this_thread::sleep_for(1ms);
        return std::nullopt;
    });
    std::mutex mu;
    std::vector<clock_type::duration> lateness;
    clock_type::time_point due;
    timer periodic(svc, [&]() -> std::optional<timer::time_point> {
        std::lock_guard l(mu);
        lateness.push_back(clock_type::now() - due);
        if (lateness.size() == 10) return std::nullopt;
        due = clock_type::now() + 20ms;
        return due;
    });
    blocked.arm(clock_type::now());
    ASSERT_TRUE(eventually([&] { return blocking.load(); }));
    {
        std::lock_guard l(mu);
        due = clock_type::now() + 20ms;
        periodic.arm(due);
    }
    ASSERT_TRUE(eventually(
        [&] {
            std::lock_guard l(mu);
            return lateness.size() == 10;
        },
        3s))
        << "the periodic timer waited behind the blocked tick";
    EXPECT_TRUE(blocking.load());
    EXPECT_FALSE(release.load());  // all ten ran while the other tick still blocked
    release = true;
    EXPECT_GE(svc.worker_threads(), 2U);
}

// The workers a blocked tick called in end once they find no work for 2 s, also while another
// timer is armed for later (a process nearly always has one: a pub/sub link's replica
// discovery, a watchdog), and also while a periodic timer keeps one worker busy now and then.
TEST(TimerService, ExtraWorkersEndWhileOtherTimersWaitForLater) {
    timer_service svc;
    timer later(svc, []() -> std::optional<timer::time_point> { return std::nullopt; });
    later.arm(clock_type::now() + 1h);
    std::atomic<int> periodic_ticks{0};
    timer periodic(svc, [&]() -> std::optional<timer::time_point> {
        ++periodic_ticks;
        return clock_type::now() + 300ms;
    });
    periodic.arm(clock_type::now());
    std::atomic<bool> release{false};
    std::atomic<int> blocked_running{0};
    std::vector<std::unique_ptr<timer>> blocked;
    for (int i = 0; i < 3; ++i) {
        blocked.push_back(std::make_unique<timer>(svc, [&]() -> std::optional<timer::time_point> {
            ++blocked_running;
            const auto until = clock_type::now() + 5s;
            while (!release && clock_type::now() < until) std::this_thread::sleep_for(1ms);
            return std::nullopt;
        }));
        blocked.back()->arm(clock_type::now());
    }
    ASSERT_TRUE(eventually([&] { return blocked_running.load() == 3; }))
        << "three blocked ticks did not get three workers";
    const auto grown = svc.worker_threads();
    EXPECT_GE(grown, 3U);
    release = true;
    const int before = periodic_ticks.load();
    EXPECT_TRUE(eventually([&] { return svc.worker_threads() == 1; }, 6s))
        << svc.worker_threads() << " workers of " << grown << " still alive";
    EXPECT_GT(periodic_ticks.load(), before) << "the periodic timer stopped";
}

// A due time at the end of time (a saturated back-off) never runs and costs no worker; the
// timer thread's "late" arithmetic saturates (UBSan reported the overflow before).
TEST(TimerService, ATimerArmedAtTheEndOfTimeNeverRunsAndCostsNoWorker) {
    timer_service svc;
    std::atomic<int> never{0}, soon{0};
    timer at_end(svc, [&]() -> std::optional<timer::time_point> {
        ++never;
        return std::nullopt;
    });
    timer periodic(svc, [&]() -> std::optional<timer::time_point> {
        return ++soon < 5 ? std::optional(clock_type::now() + 20ms) : std::nullopt;
    });
    at_end.arm(timer::time_point::max());
    periodic.arm(clock_type::now());
    ASSERT_TRUE(eventually([&] { return soon.load() == 5; }));
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(never.load(), 0);
    EXPECT_EQ(svc.worker_threads(), 1U);
}

// One timer's ticks never overlap, even when it is re-armed while its tick runs and workers
// are free: the due time passing meanwhile runs once the tick returns.
TEST(TimerService, ATimersTicksNeverOverlap) {
    timer_service svc;
    std::atomic<int> inside{0}, most{0}, runs{0};
    std::unique_ptr<timer> t;
    t = std::make_unique<timer>(svc, [&]() -> std::optional<timer::time_point> {
        const int now_inside = ++inside;
        most = std::max(most.load(), now_inside);
        std::this_thread::sleep_for(20ms);
        --inside;
        ++runs;
        return std::nullopt;
    });
    for (int i = 0; i < 10; ++i) {
        t->arm(clock_type::now());
        std::this_thread::sleep_for(5ms);
    }
    ASSERT_TRUE(eventually([&] { return runs.load() >= 2 && !t->armed(); }, 3s));
    EXPECT_EQ(most.load(), 1);
    t.reset();
}

TEST(TimerService, AThrowingTickStopsOnlyItself) {
    timer_service svc;
    std::atomic<int> good{0};
    timer bad(
        svc, []() -> std::optional<timer::time_point> { throw std::runtime_error("tick failed"); });
    timer ok(svc, [&]() -> std::optional<timer::time_point> {
        return ++good < 3 ? std::optional(clock_type::now()) : std::nullopt;
    });
    bad.arm(clock_type::now());
    ok.arm(clock_type::now() + 1ms);
    EXPECT_TRUE(eventually([&] { return good.load() == 3; }));
    EXPECT_FALSE(bad.armed());
}

// Many timers armed, re-armed and destroyed from several threads at random (seeded): every
// armed timer fires exactly once per arm that was not overridden, none fires after its
// destructor returned, and the service does not deadlock.
TEST(TimerService, RandomizedArmDisarmDestroyFromManyThreads) {
    const auto seed = static_cast<unsigned>(std::random_device{}());
    SCOPED_TRACE("seed " + std::to_string(seed));
    timer_service svc;
    constexpr int threads = 4, per_thread = 200;
    std::atomic<int> late{0};
    std::vector<std::thread> ts;
    for (int k = 0; k < threads; ++k) {
        ts.emplace_back([&, k] {
            std::mt19937 rng(seed + k);
            for (int i = 0; i < per_thread; ++i) {
                auto destroyed = std::make_shared<std::atomic<bool>>(false);
                auto t = std::make_unique<timer>(
                    svc, [destroyed, &late]() -> std::optional<timer::time_point> {
                        if (destroyed->load()) ++late;
                        return std::nullopt;
                    });
                const int arms = static_cast<int>(rng() % 3);
                for (int a = 0; a < arms; ++a)
                    t->arm(clock_type::now() + std::chrono::microseconds(rng() % 500));
                if (rng() % 2) t->disarm();
                if (rng() % 2) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 300));
                t.reset();
                destroyed->store(true);
            }
        });
    }
    for (auto& t : ts) t.join();
    std::this_thread::sleep_for(5ms);
    EXPECT_EQ(late.load(), 0);
}
