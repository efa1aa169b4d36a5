// When unlock() holds its release back (lock/src/release_deferral.hpp), on a fake clock.
#include "release_deferral.hpp"

#include <gtest/gtest.h>

// A namespace of its own: a unity batch compiles this file with others (tests/CMakeLists.txt).
namespace release_deferral_test {

using namespace std::chrono_literals;
using redcoord::detail::release_deferral;
using clock_type = std::chrono::steady_clock;

namespace {
const clock_type::time_point t0{std::chrono::hours(1)};
}

TEST(ReleaseDeferral, TheFirstUnlockIsNeverHeldBack) {
    release_deferral d;
    d.on_acquire(t0);
    EXPECT_FALSE(d.on_unlock(t0 + 1ms));
}

TEST(ReleaseDeferral, ALockRightAfterAnUnlockMakesTheNextUnlockHoldBack) {
    release_deferral d;
    d.on_acquire(t0);
    EXPECT_FALSE(d.on_unlock(t0 + 100us));
    d.on_acquire(t0 + 110us);  // 10 us after the unlock: a re-locking loop
    EXPECT_TRUE(d.on_unlock(t0 + 200us));
    EXPECT_EQ(d.due(), t0 + 200us + release_deferral::linger);
    d.on_acquire(t0 + 201us);
    EXPECT_TRUE(d.on_unlock(t0 + 300us));
    EXPECT_EQ(d.due(), t0 + 300us + release_deferral::linger);  // each unlock moves it
}

TEST(ReleaseDeferral, APauseBeforeTheNextLockEndsTheStreak) {
    release_deferral d;
    d.on_acquire(t0);
    (void)d.on_unlock(t0 + 10us);
    d.on_acquire(t0 + 20us);
    EXPECT_TRUE(d.on_unlock(t0 + 30us));
    d.on_acquire(t0 + 30us + release_deferral::streak_gap);  // a hand-over's pause, not a loop
    EXPECT_FALSE(d.on_unlock(t0 + 1ms));
}

TEST(ReleaseDeferral, AnAcquireWithoutAnUnlockBeforeItIsNoStreak) {
    // Two acquire calls in a row (the first one timed out) do not count as a re-lock.
    release_deferral d;
    d.on_acquire(t0);
    d.on_acquire(t0 + 1us);
    EXPECT_FALSE(d.on_unlock(t0 + 2us));
}

}  // namespace release_deferral_test
