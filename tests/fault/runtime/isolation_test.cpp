// The runtime's isolation (issue 35), in a shorter run than bench_runtime's: before the tick
// workers, the blocked ticks of the paused servers' objects ran on the one timer thread and
// the healthy locks went unextended for seconds (lost within the first second or two).

#include "isolation_scenario.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <iostream>

using namespace std::chrono_literals;

TEST(RuntimeIsolation, StalledServersAndSlowSlotsCostNoHealthyLockItsWatchdog) {
    const auto r = redcoord::scenario::run_isolation(8s, 100);
    std::cout << "[runtime isolation] 100 watchdog locks (ttl 1000 ms), 8 s with three paused"
              << " servers and two 5 s on_lost slots: largest gap between extensions "
              << r.extension_gap_max.count() << " ms, locks lost " << r.locks_lost
              << ", tick workers " << r.tick_workers << ", callback workers " << r.callback_workers
              << "\n";
    RecordProperty("isolation_extension_gap_max_ms", static_cast<int>(r.extension_gap_max.count()));
    EXPECT_EQ(r.locks_lost, 0) << "a healthy lock lost its watchdog";
    EXPECT_EQ(r.keys_expired, 0) << "a healthy lock's key expired in Redis";
    EXPECT_EQ(r.slow_slots_run, 2) << "the slow locks' losses were not reported";
}
