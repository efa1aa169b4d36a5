#pragma once
/// @file
/// The CMD that `lock` and `elect` run: its own process group (so the whole group can be
/// stopped), and a parent-death signal so it never outlives redcoord unprotected.

#include <sys/types.h>

#include "reaper.hpp"

#include <array>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace redcoord::cli {

/// CMD could not be started; `code` is 127 (not found) or 126 (not executable).
class exec_failure : public std::runtime_error {
public:
    exec_failure(int code, const std::string& what) : std::runtime_error(what), code_(code) {}
    [[nodiscard]] int code() const noexcept { return code_; }

private:
    int code_;
};

/// Descriptors CMD gets in place of redcoord's: its stdin, stdout, stderr and descriptor 3, in
/// that order; -1 leaves redcoord's own (and no descriptor 3). They should be close-on-exec in
/// redcoord, so that CMDs started at the same time by other threads do not inherit them.
struct child_stdio {
    std::array<int, 4> fds{-1, -1, -1, -1};
};

/// A running CMD. Thread-safety: none; use from the thread that started it (the main thread,
/// which must outlive the child: PR_SET_PDEATHSIG fires when the forking *thread* ends).
class child_process {
public:
    /// fork + execvpe `argv` (searched on PATH) with the parent's environment plus `extra_env`
    /// (`NAME=value` entries, which override). In the child, before exec: own process group
    /// (setpgid), PR_SET_PDEATHSIG = SIGTERM (and exit at once if the parent is already gone),
    /// default signal mask and dispositions. When redcoord is the terminal's foreground job,
    /// CMD's group becomes the foreground until the child_process is destroyed. redcoord
    /// becomes a child subreaper, so members of CMD's group that outlive their parent are
    /// reaped here. With a `reaper`, the child announces its group to it before exec
    /// (deadline_reaper::announce_in_child), so CMD never runs unguarded. `stdio` replaces
    /// CMD's standard descriptors (and gives it descriptor 3); with its stdin replaced, CMD
    /// never takes the terminal's foreground.
    /// @throws exec_failure when exec fails (reported through a close-on-exec pipe);
    /// @throws redcoord::error when fork fails.
    child_process(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
                  const deadline_reaper* reaper = nullptr, const child_stdio& stdio = {});
    /// If CMD was not reaped: SIGKILL to its group and reap. Never throws.
    ~child_process();
    child_process(const child_process&) = delete;
    child_process& operator=(const child_process&) = delete;

    [[nodiscard]] pid_t pid() const noexcept { return pid_; }
    /// Reaps CMD if it ended: its exit code, or 128 + signal. nullopt while it runs. Reaps only
    /// members of CMD's group, never redcoord's other children (the reaper).
    [[nodiscard]] std::optional<int> try_reap() noexcept;
    /// The status once reaped.
    [[nodiscard]] std::optional<int> status() const noexcept { return status_; }
    /// Sends `sig` to CMD's whole process group (ignores ESRCH).
    void signal_group(int sig) const noexcept;
    /// True while any process of CMD's group exists.
    [[nodiscard]] bool group_alive() const noexcept;

private:
    pid_t pid_ = -1;
    std::optional<int> status_;
    bool took_terminal_ = false;
};

}  // namespace redcoord::cli
