#pragma once
/// @file
/// Runs CMD while something (a lock, a leadership) is held, and stops CMD's process group
/// before that holding can no longer be vouched for: by this process, and, should it be paused
/// or stuck, by a deadline reaper process (reaper.hpp) that it keeps informed.

#include "child_process.hpp"
#include "os_signals.hpp"

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace redcoord::cli {

/// What the holder reports on each check.
struct hold_state {
    /// The holding is gone (lock lost, leadership revoked).
    bool lost = false;
    /// Until when the holding is valid locally (steady clock); nullopt when unknown.
    std::optional<std::chrono::steady_clock::time_point> valid_until;
};

/// Timing of the stop.
struct supervise_options {
    /// Time between SIGTERM and SIGKILL to CMD's group, in milliseconds (zero: SIGKILL at once).
    std::chrono::milliseconds grace{5000};
    /// CMD's group gets SIGTERM once the remaining validity drops to this (milliseconds), and
    /// SIGKILL at the latest when the validity ends; renewals normally keep the remaining
    /// validity far above it. Zero: react only to `lost`.
    std::chrono::milliseconds early_window{0};
    /// How often `check` runs (milliseconds; > 0).
    std::chrono::milliseconds tick{50};
    /// CMD's stdin, stdout, stderr and descriptor 3 (child_stdio; -1: redcoord's own).
    child_stdio stdio;
    /// Adds `REDCOORD_DEADLINE_MS` to CMD's environment; false: the caller's `env` says it.
    bool deadline_env = true;
    /// Descriptors to read while CMD runs (redcoord's ends of CMD's output pipes, non-blocking):
    /// `on_readable` is called with each one that is readable or hung up, on the supervising
    /// thread; it returns false once the descriptor is done with (end of file).
    std::vector<int> watch;
    /// See `watch`.
    std::function<bool(int)> on_readable;
};

/// The shortest lock TTL or election term `lock` and `elect` accept, in milliseconds. The
/// lease is renewed every third of it and CMD is stopped once less than a quarter is left,
/// which leaves about 0.4 of it for a renewal's round trip; supervision looks every 50 ms
/// (supervise_options::tick). Measured on a loaded 2-core machine: 150 ms held, 120 ms or
/// less was lost before its first renewal. Below this, the lease would be lost at once.
inline constexpr std::chrono::milliseconds min_lease{200};

/// Why supervision ended.
enum class stop_reason {
    exited,  ///< CMD exited on its own.
    lost,    ///< The holding was lost (or about to run out); CMD's group was stopped.
    signal,  ///< redcoord got SIGINT/SIGTERM/SIGHUP; CMD's group was stopped.
};

/// The outcome: CMD's status (exit code or 128 + signal) and why it ended.
struct supervise_result {
    int status = 0;
    stop_reason reason = stop_reason::exited;
    int signo = 0;  ///< The signal redcoord got, for stop_reason::signal.
};

/// Starts CMD (`argv`, with `env` plus `REDCOORD_DEADLINE_MS`: the milliseconds of validity
/// left at its start) in its own process group and supervises it until it and the rest of
/// its group are gone. A deadline_reaper is forked first and armed with the validity from
/// `check`; every later validity is handed to it, so CMD's group is SIGTERMed `early_window`
/// before and SIGKILLed at the last validity even while this process is paused or stuck.
///
/// Calls `check` every tick and whenever `wake` is notified. When the holding is lost or runs
/// out, or a termination signal arrives on `signals` (null: the caller watches signals itself,
/// and reports through `check` what should stop CMD): SIGTERM to the group, SIGKILL after the
/// grace period or when the validity ends, whichever is first. When CMD exits on its own,
/// members of its group still running get the same treatment, so nothing of CMD's keeps
/// working after the holding is released. A stop by the reaper counts as stop_reason::lost.
/// When `check` reports the holding lost (or no validity) before the start, CMD is not
/// started (stop_reason::lost, status 0). Runs on the calling thread; never throws from
/// `check` (an exception from it counts as lost).
/// @throws exec_failure when CMD cannot be started; redcoord::error when fork or pipe fails.
[[nodiscard]] supervise_result supervise(const std::vector<std::string>& argv,
                                         std::vector<std::string> env, signal_source* signals,
                                         const wakeup& wake,
                                         const std::function<hold_state()>& check,
                                         supervise_options opts);

}  // namespace redcoord::cli
