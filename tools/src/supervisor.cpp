#include "supervisor.hpp"

#include "reaper.hpp"

#include <poll.h>
#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX kill, sigaction, sigset_t
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

namespace redcoord::cli {
namespace {

using clock_type = std::chrono::steady_clock;

int poll_ms(clock_type::time_point until) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(until - clock_type::now()).count();
    return static_cast<int>(std::clamp<long long>(left, 0, 1000));
}

hold_state checked(const std::function<hold_state()>& check) {
    try {
        return check();
    } catch (...) {
        return hold_state{true, std::nullopt};
    }
}

}  // namespace

supervise_result supervise(const std::vector<std::string>& argv, std::vector<std::string> env,
                           signal_source* signals, const wakeup& wake,
                           const std::function<hold_state()>& check, supervise_options opts) {
    supervise_result result;
    const hold_state first = checked(check);
    if (first.lost || !first.valid_until) {
        result.reason = stop_reason::lost;
        return result;
    }
    // The last validity known to be ours: never SIGKILL later than this, whoever stops CMD.
    clock_type::time_point valid_until = *first.valid_until;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(valid_until - clock_type::now());
    if (opts.deadline_env)
        env.push_back("REDCOORD_DEADLINE_MS=" +
                      std::to_string(std::max<long long>(left.count(), 0)));

    // The reaper before CMD (destroyed after it): CMD never runs without one.
    deadline_reaper reaper(valid_until, reaper_options{opts.grace, opts.early_window});
    child_process child(argv, env, &reaper, opts.stdio);
    std::vector<int> watched = opts.watch;
    reaper.set_target(child.pid());
    // Without a signalfd (whose SIGCHLD wakes the loop), a pidfd tells when CMD exits; on a
    // kernel without pidfd_open the loop notices it within a tick.
    const int exited_fd =
        signals ? -1 : static_cast<int>(::syscall(SYS_pidfd_open, child.pid(), 0));
    struct close_on_exit {
        int fd;
        ~close_on_exit() {
            if (fd >= 0) ::close(fd);
        }
    } exited_guard{exited_fd};

    bool stopping = false;
    bool killed = false;
    clock_type::time_point kill_at{};
    const auto stop_group = [&](clock_type::time_point latest_kill) {
        stopping = true;
        kill_at = std::min({clock_type::now() + opts.grace, latest_kill, valid_until});
        reaper.stopping(kill_at);
        child.signal_group(opts.grace.count() > 0 ? SIGTERM : SIGKILL);
    };
    const auto begin_stop = [&](stop_reason why, clock_type::time_point latest_kill) {
        if (stopping) return;
        result.reason = why;
        stop_group(latest_kill);
    };

    for (;;) {
        // 1. Signals: SIGCHLD only wakes us; termination signals stop CMD.
        while (auto sig = signals ? signals->read() : std::nullopt) {
            if (*sig != SIGCHLD && !stopping) {
                result.signo = *sig;
                begin_stop(stop_reason::signal, clock_type::time_point::max());
            }
        }
        // 2. The holding. A reaper that fired means this process was paused past the validity.
        if (!stopping && reaper.fired()) {
            result.reason = stop_reason::lost;
            stopping = killed = true;
            kill_at = clock_type::now();
        }
        if (!stopping) {
            const hold_state st = checked(check);
            const auto now = clock_type::now();
            if (st.valid_until && !st.lost) {
                valid_until = *st.valid_until;
                reaper.extend(valid_until);
            }
            if (st.lost) {
                begin_stop(stop_reason::lost, clock_type::time_point::max());
            } else if (st.valid_until && opts.early_window.count() > 0 &&
                       *st.valid_until - now <= opts.early_window) {
                begin_stop(stop_reason::lost, *st.valid_until);
            }
        }
        // 3. CMD's leader process, then the rest of its group.
        const bool leader_done = child.try_reap().has_value();
        if (leader_done && !child.group_alive()) break;
        // A member that survives SIGKILL (uninterruptible sleep) cannot be waited for: give up
        // on it a grace period after the SIGKILL.
        if (leader_done && killed &&
            clock_type::now() >= kill_at + std::max(opts.grace, std::chrono::milliseconds(1000)))
            break;
        // CMD exited but left members of its group running: stop them too.
        if (leader_done && !stopping) stop_group(clock_type::time_point::max());
        if (stopping && !killed && clock_type::now() >= kill_at) {
            killed = true;
            child.signal_group(SIGKILL);
        }
        // 4. Sleep until something happens (SIGCHLD also reports the reaper's exit).
        auto next = clock_type::now() + opts.tick;
        if (stopping && !killed) next = std::min(next, kill_at);
        std::vector<pollfd> fds{{signals ? signals->fd() : exited_fd, POLLIN, 0},
                                {wake.fd(), POLLIN, 0}};
        for (int fd : watched) fds.push_back({fd, POLLIN, 0});
        if (::poll(fds.data(), fds.size(), poll_ms(next)) > 0) {
            if (fds[1].revents & POLLIN) wake.drain();
            for (std::size_t i = 2; i < fds.size(); ++i)
                if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) && !opts.on_readable(fds[i].fd))
                    std::erase(watched, fds[i].fd);
        }
    }
    reaper.disarm();
    // CMD "exited" because the reaper stopped it while this process was paused: the holding
    // ran out, say so.
    if (result.reason == stop_reason::exited && reaper.fired()) result.reason = stop_reason::lost;
    result.status = *child.status();
    return result;
}

}  // namespace redcoord::cli
