#pragma once
// Whether unlock() holds its release back, without I/O. A lock object whose lock() calls come
// right after its unlock() calls (a loop of short critical sections) re-locks in one command:
// the held-back release is renewed in place by the next attempt (scripts.hpp, "Re-lock"),
// instead of a release and an acquire each. One that does not (a hand-over, a lock taken now
// and then) releases at once, as before. A held-back release goes out after `linger` at the
// latest (the driver's timer), so a holder that stops re-locking keeps others waiting at most
// that much longer; the object's destruction sends it at once.

#include <chrono>

namespace redcoord::detail {

class release_deferral {
public:
    using time_point = std::chrono::steady_clock::time_point;

    // A gap from unlock() to the next acquire call below `streak_gap` marks a re-locking
    // object; `linger` bounds how long a release is held back.
    static constexpr std::chrono::microseconds streak_gap{200};
    static constexpr std::chrono::microseconds linger{5000};

    // unlock() at `now`: true when its release is to be held back (until due()).
    [[nodiscard]] bool on_unlock(time_point now) noexcept {
        unlocked_at_ = now;
        unlocked_ = true;
        return streak_;
    }
    // An acquire call starts at `now`.
    void on_acquire(time_point now) noexcept {
        streak_ = unlocked_ && now - unlocked_at_ < streak_gap;
        unlocked_ = false;
    }
    // When a release held back at the last unlock() must go out.
    [[nodiscard]] time_point due() const noexcept { return unlocked_at_ + linger; }

private:
    time_point unlocked_at_{};
    bool unlocked_ = false;  // an unlock() came after the last acquire call started
    bool streak_ = false;    // the last acquire call came within streak_gap of an unlock()
};

}  // namespace redcoord::detail
