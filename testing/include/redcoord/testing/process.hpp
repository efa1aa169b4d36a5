#pragma once
/// @file
/// A child process owned by the caller: started with fork/exec, stopped by PID.

#include <redcoord/core/export.hpp>

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord::testing {

/// How to start a child.
struct process_options {
    /// File that receives the child's stdout and stderr; empty keeps the parent's.
    std::string output_file;
    /// Environment entries `NAME=value` added to the parent's environment, each replacing the
    /// parent's entry of the same name.
    std::vector<std::string> env;
    /// When true the child gets SIGKILL if the parent thread that started it dies
    /// (PR_SET_PDEATHSIG), so a crashed test leaves no orphan servers behind.
    bool die_with_parent = true;
    /// When true the child leads its own process group (signals can target the group).
    bool own_process_group = false;
};

/// A child process; the destructor SIGKILLs it (if still running) and reaps it.
///
/// @par Thread safety
/// None; use from one thread. Never kills anything but its own PID.
///
/// @par Errors
/// The constructor throws redcoord::error when the program cannot be started; signals, waits and
/// the destructor never throw.
///
/// @par Cost
/// One fork/exec; kill() sends SIGKILL and reaps.
class process {
public:
    /// Starts `argv[0]` (searched on PATH) with `argv`.
    /// @throws redcoord::error when the program cannot be started.
    explicit process(std::vector<std::string> argv, process_options opts = {});
    /// Takes over the other's child; the other is left without one.
    process(process&&) noexcept;
    /// Kills and reaps this object's child (as the destructor), then takes over the other's.
    process& operator=(process&&) noexcept;
    process(const process&) = delete;
    process& operator=(const process&) = delete;
    ~process();

    /// The child's process id (-1 once moved from).
    [[nodiscard]] pid_t pid() const noexcept { return pid_; }
    /// Sends `sig` to the child (nothing if it was reaped already).
    void signal(int sig) const noexcept;
    /// SIGKILL and reap.
    void kill() noexcept;
    /// The exit status if the child has ended (exit code, or 128 + signal number), else nullopt.
    std::optional<int> try_wait() noexcept;
    /// Waits up to `timeout` for the child to end; nullopt if it is still running.
    std::optional<int> wait_for(std::chrono::milliseconds timeout) noexcept;
    /// Waits for the child to end and returns its status as try_wait().
    int wait() noexcept;
    /// True until the child has been reaped.
    [[nodiscard]] bool running() noexcept;

private:
    pid_t pid_ = -1;
    std::optional<int> status_;
};

}  // namespace redcoord::testing

REDCOORD_API_END
