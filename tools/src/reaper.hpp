#pragma once
/// @file
/// The deadline reaper: a small process that stops CMD's process group when the holding's
/// deadline passes, even while the supervising redcoord is paused (SIGSTOP, a debugger, a
/// stopped cgroup) or stuck. redcoord hands it every new deadline over a pipe.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>

namespace redcoord::cli {

/// Timing of the reaper's stop, as the supervisor's (supervise_options).
struct reaper_options {
    /// SIGTERM to SIGKILL, in milliseconds (zero: SIGKILL only).
    std::chrono::milliseconds grace{5000};
    /// SIGTERM this long before the deadline; SIGKILL at the deadline.
    std::chrono::milliseconds early_window{0};
};

/// Owns the reaper process. The reaper is forked before CMD, leads its own process group (so
/// signals to redcoord's or CMD's group do not reach it) and, after the fork, runs only
/// async-signal-safe code: it needs none of redcoord's threads, locks or heap.
///
/// The reaper, given CMD's group (set_target) and the last deadline (extend):
/// - SIGTERM to the group `early_window` before the deadline, SIGKILL at the deadline
///   (CLOCK_MONOTONIC, the steady_clock), then exits with fired_status;
/// - when the pipe closes (redcoord died) while armed: SIGTERM at once, SIGKILL after the grace
///   period or at the deadline, whichever is first, or as soon as the group is gone;
/// - after disarm(): exits at once without signalling.
/// A deadline that passes before the group is known kills the group as soon as it is.
///
/// Thread-safety: none; use from the thread that supervises CMD. The announce_in_child()
/// member alone is meant for a forked child.
class deadline_reaper {
public:
    /// Exit status of a reaper that stopped CMD's group itself.
    static constexpr int fired_status = 3;

    /// Forks the reaper armed with `deadline` (steady clock).
    /// @throws redcoord::error when pipe or fork fails.
    deadline_reaper(std::chrono::steady_clock::time_point deadline, reaper_options opts);
    /// Closes the pipe (an armed reaper then stops CMD's group at once) and reaps the reaper,
    /// waiting for it only when disarmed (briefly otherwise). Never throws.
    ~deadline_reaper();
    deadline_reaper(const deadline_reaper&) = delete;
    deadline_reaper& operator=(const deadline_reaper&) = delete;

    /// The reaper's pid.
    [[nodiscard]] pid_t pid() const noexcept { return pid_; }
    /// Tells the reaper CMD's process group. Called in CMD's child after setpgid and before
    /// exec, so CMD never runs unknown to the reaper even if redcoord stops right after fork.
    /// Async-signal-safe.
    void announce_in_child() const noexcept;
    /// Tells the reaper CMD's process group (again, from the parent). Never blocks.
    void set_target(pid_t pgid) const noexcept;
    /// The holding's new deadline; the last one received counts. Never blocks: if the pipe is
    /// full the update is dropped and the reaper keeps the earlier (safe) deadline.
    void extend(std::chrono::steady_clock::time_point deadline) noexcept;
    /// The supervisor sent SIGTERM itself: the reaper only SIGKILLs, at `kill_at`.
    void stopping(std::chrono::steady_clock::time_point kill_at) const noexcept;
    /// CMD's group is gone: the reaper exits without signalling. Then waits for it.
    void disarm() noexcept;
    /// True once the reaper exited after stopping CMD's group itself (reaps it if it ended).
    [[nodiscard]] bool fired() noexcept;

private:
    void send(std::uint32_t kind, std::int64_t value) const noexcept;
    pid_t pid_ = -1;
    int fd_ = -1;  // write end, O_NONBLOCK | O_CLOEXEC
    std::optional<int> status_;
    std::chrono::steady_clock::time_point last_sent_{};
};

}  // namespace redcoord::cli
