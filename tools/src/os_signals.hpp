#pragma once
/// @file
/// Signals without work in signal handlers: SIGINT/SIGTERM/SIGHUP/SIGCHLD are blocked in every
/// thread and read from a signalfd (commands that supervise a CMD) or by one sigwait thread
/// (commands that hold nothing a signal must release).

#include <chrono>
#include <optional>

namespace redcoord::cli {

/// Blocks SIGINT, SIGTERM, SIGHUP and SIGCHLD in the calling thread. Call it first in main(),
/// before any thread starts, so every thread inherits the mask. SIGPIPE is ignored (a closed
/// stdout shows up as a write error instead of killing redcoord while it holds a lock).
void block_signals();

/// Restores the default dispositions and an empty mask; used in a forked child before exec.
/// Async-signal-safe.
void restore_signals_in_child() noexcept;

/// A signalfd on the blocked signals. Not thread-safe: read it from one thread.
class signal_source {
public:
    /// @throws redcoord::error when the signalfd cannot be created.
    signal_source();
    ~signal_source();
    signal_source(const signal_source&) = delete;
    signal_source& operator=(const signal_source&) = delete;
    /// The descriptor, for poll().
    [[nodiscard]] int fd() const noexcept { return fd_; }
    /// One pending signal number, or nullopt when none is pending (never blocks).
    [[nodiscard]] std::optional<int> read() noexcept;
    /// Waits up to `timeout` for a termination signal (SIGINT/SIGTERM/SIGHUP) or for `wake_fd`
    /// (an eventfd, -1 for none) to become readable. Returns the signal number, or nullopt
    /// on timeout or wake-up. SIGCHLD is consumed and ignored here.
    [[nodiscard]] std::optional<int> wait_termination(std::chrono::milliseconds timeout,
                                                      int wake_fd = -1) noexcept;

private:
    int fd_ = -1;
};

/// An eventfd that callbacks on library threads use to wake the main loop. Thread-safe.
class wakeup {
public:
    /// @throws redcoord::error when the eventfd cannot be created.
    wakeup();
    ~wakeup();
    wakeup(const wakeup&) = delete;
    wakeup& operator=(const wakeup&) = delete;
    /// Makes fd() readable. Async-signal-safe; never throws.
    void notify() const noexcept;
    /// Clears the readable state.
    void drain() const noexcept;
    [[nodiscard]] int fd() const noexcept { return fd_; }

private:
    int fd_ = -1;
};

/// Starts a detached thread that waits for SIGINT/SIGTERM/SIGHUP and then flushes stdout and
/// ends the process with 128 + signal at once (_exit). For commands that hold nothing that a
/// signal must release (wait, signal, queue, leader, observe, barrier: an arrival simply
/// expires after its lease).
void exit_on_termination_signal();

}  // namespace redcoord::cli
