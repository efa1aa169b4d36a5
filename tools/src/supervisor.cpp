#include "supervisor.hpp"

#include <poll.h>
#include <signal.h>

#include <algorithm>

namespace redcoord::cli {
namespace {

using clock_type = std::chrono::steady_clock;

int poll_ms(clock_type::time_point until) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - clock_type::now()).count();
    return static_cast<int>(std::clamp<long long>(left, 0, 1000));
}

}  // namespace

supervise_result supervise(child_process& child, signal_source& signals, const wakeup& wake,
                           const std::function<hold_state()>& check, supervise_options opts) {
    supervise_result result;
    bool stopping = false;
    bool killed = false;
    clock_type::time_point kill_at{};

    const auto begin_stop = [&](stop_reason why, clock_type::time_point latest_kill) {
        if (stopping) return;
        stopping = true;
        result.reason = why;
        kill_at = std::min(clock_type::now() + opts.grace, latest_kill);
        child.signal_group(opts.grace.count() > 0 ? SIGTERM : SIGKILL);
    };

    for (;;) {
        // 1. Signals: SIGCHLD only wakes us; termination signals stop CMD.
        while (auto sig = signals.read()) {
            if (*sig != SIGCHLD && !stopping) {
                result.signo = *sig;
                begin_stop(stop_reason::signal, clock_type::time_point::max());
            }
        }
        // 2. The holding.
        if (!stopping) {
            hold_state st;
            try {
                st = check();
            } catch (...) {
                st.lost = true;
            }
            const auto now = clock_type::now();
            if (st.lost) {
                begin_stop(stop_reason::lost, clock_type::time_point::max());
            } else if (st.valid_until && opts.early_window.count() > 0 && *st.valid_until - now <= opts.early_window) {
                begin_stop(stop_reason::lost, *st.valid_until);
            }
        }
        // 3. CMD's leader process, then the rest of its group.
        const bool leader_done = child.try_reap().has_value();
        if (leader_done && !child.group_alive()) break;
        // A member that survives SIGKILL (uninterruptible sleep) cannot be waited for: give up
        // on it a grace period after the SIGKILL.
        if (leader_done && killed && clock_type::now() >= kill_at + std::max(opts.grace, std::chrono::milliseconds(1000))) break;
        if (leader_done && !stopping) {
            // CMD exited but left members of its group running: stop them too.
            stopping = true;
            kill_at = clock_type::now() + opts.grace;
            child.signal_group(opts.grace.count() > 0 ? SIGTERM : SIGKILL);
        }
        if (stopping && !killed && clock_type::now() >= kill_at) {
            killed = true;
            child.signal_group(SIGKILL);
        }
        // 4. Sleep until something happens.
        auto next = clock_type::now() + opts.tick;
        if (stopping && !killed) next = std::min(next, kill_at);
        pollfd fds[2] = {{signals.fd(), POLLIN, 0}, {wake.fd(), POLLIN, 0}};
        if (::poll(fds, 2, poll_ms(next)) > 0 && (fds[1].revents & POLLIN)) wake.drain();
    }
    result.status = *child.status();
    return result;
}

}  // namespace redcoord::cli
