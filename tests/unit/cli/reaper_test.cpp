// The deadline reaper (tools/src/reaper.hpp) on its own: it stops a process group at the
// deadline it was last given, moves with extensions, stops the group at once when its owner's
// pipe closes, and leaves the group alone once disarmed. Prints how late the SIGKILL came.
#include "reaper.hpp"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using redcoord::cli::deadline_reaper;
using redcoord::cli::reaper_options;
using clock_type = std::chrono::steady_clock;

namespace {

/// A child leading its own process group that ignores SIGTERM (or exits 0 on it).
pid_t start_target(bool ignore_term) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::setpgid(0, 0);
        ::signal(SIGTERM, ignore_term ? SIG_IGN : SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, nullptr);
        for (;;) ::pause();
    }
    ::setpgid(pid, pid);
    return pid;
}

/// Waits up to `limit` for `pid` to end; its end time, or nullopt.
std::optional<clock_type::time_point> wait_end(pid_t pid, std::chrono::milliseconds limit) {
    const auto until = clock_type::now() + limit;
    while (clock_type::now() < until) {
        int st = 0;
        if (::waitpid(pid, &st, WNOHANG) == pid) return clock_type::now();
        std::this_thread::sleep_for(200us);
    }
    return std::nullopt;
}

void finish(pid_t pid) {
    ::kill(-pid, SIGKILL);
    int st = 0;
    ::waitpid(pid, &st, 0);
}

}  // namespace

TEST(Reaper, KillsTheGroupAtTheDeadline) {
    std::vector<double> late_ms;
    for (int i = 0; i < 20; ++i) {
        const pid_t t = start_target(true);
        const auto deadline = clock_type::now() + 50ms;
        deadline_reaper r(deadline, reaper_options{200ms, 20ms});
        r.set_target(t);
        const auto end = wait_end(t, 2s);
        ASSERT_TRUE(end.has_value()) << "the group outlived its deadline";
        late_ms.push_back(std::chrono::duration<double, std::milli>(*end - deadline).count());
        EXPECT_GE(late_ms.back(), 0.0) << "SIGKILL came before the deadline";
        const auto until = clock_type::now() + 1s;
        while (!r.fired() && clock_type::now() < until) std::this_thread::sleep_for(1ms);
        EXPECT_TRUE(r.fired());
    }
    std::sort(late_ms.begin(), late_ms.end());
    std::printf(
        "[measure] reaper SIGKILL after its deadline (incl. up to 0.2 ms polling): p50 %.2f ms, "
        "p99 %.2f ms, "
        "max %.2f ms over %zu runs\n",
        late_ms[late_ms.size() / 2], late_ms[late_ms.size() - 1], late_ms.back(), late_ms.size());
    EXPECT_LT(late_ms.back(), 100.0);
}

TEST(Reaper, ExtensionMovesTheDeadline) {
    const pid_t t = start_target(true);
    deadline_reaper r(clock_type::now() + 100ms, reaper_options{0ms, 0ms});
    r.set_target(t);
    std::this_thread::sleep_for(50ms);
    r.extend(clock_type::now() + 300ms);
    EXPECT_FALSE(wait_end(t, 200ms).has_value()) << "killed at the old deadline";
    EXPECT_TRUE(wait_end(t, 2s).has_value()) << "not killed at the new deadline";
}

TEST(Reaper, ClosedPipeStopsTheGroupAtOnce) {
    const pid_t t = start_target(false);
    {
        deadline_reaper r(clock_type::now() + 10s, reaper_options{1s, 0ms});
        r.set_target(t);
    }  // the owner is gone: SIGTERM now, not in 10 s
    EXPECT_TRUE(wait_end(t, 500ms).has_value());
}

TEST(Reaper, DisarmedReaperLeavesTheGroupAlone) {
    const pid_t t = start_target(true);
    deadline_reaper r(clock_type::now() + 50ms, reaper_options{0ms, 0ms});
    r.set_target(t);
    r.disarm();
    EXPECT_FALSE(wait_end(t, 200ms).has_value());
    EXPECT_FALSE(r.fired());
    finish(t);
}
