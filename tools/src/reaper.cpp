#include "reaper.hpp"

#include <redcoord/core/errors.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX kill, sigaction, sigset_t
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>  // NOLINT(modernize-deprecated-headers): POSIX clock_gettime, nanosleep
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <string>
#include <system_error>
#include <thread>

namespace redcoord::cli {
namespace {

using std::chrono::steady_clock;

enum : std::uint32_t {
    msg_target = 1,
    msg_deadline = 2,
    msg_stopping = 3,
    msg_disarm = 4
};

// One message: smaller than PIPE_BUF, so each write(2) is atomic and the supervisor's and CMD
// child's messages never interleave.
struct message {
    std::uint32_t kind;
    std::uint32_t pad;
    std::int64_t value;  // a pgid, or CLOCK_MONOTONIC nanoseconds
};
static_assert(sizeof(message) == 16);

constexpr std::int64_t never = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t orphan_poll_ns =
    10'000'000;  // how often an orphaned reaper looks for the group's end

// steady_clock is CLOCK_MONOTONIC on Linux (libstdc++ and libc++), the clock the reaper reads.
std::int64_t ns_of(steady_clock::time_point t) noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// Everything below runs in the forked reaper: async-signal-safe calls only (no heap, no locks,
// no stdio), since the fork copied a multi-threaded redcoord whose locks may be held.

std::int64_t mono_ns() noexcept {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

timespec to_timespec(std::int64_t ns) noexcept {
    ns = std::max<std::int64_t>(ns, 0);
    return timespec{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
}

bool group_gone(pid_t pgid) noexcept { return ::kill(-pgid, 0) != 0 && errno == ESRCH; }

// Keeps only the pipe (as fd 3) and /dev/null as stdio: the reaper must not hold redcoord's
// Redis sockets, or a pipe a caller waits on for EOF, any longer than redcoord does.
int isolate_descriptors(int in) noexcept {
    if (in != 3) {
        ::dup2(in, 3);
        in = 3;
    }
    if (::syscall(SYS_close_range, 4U, ~0U, 0U) != 0)
        for (int fd = 4; fd < 65536; ++fd) ::close(fd);
    const int null = ::open("/dev/null", O_RDWR);
    if (null >= 0) {
        for (int fd = 0; fd < 3; ++fd) ::dup2(null, fd);
        if (null > 3) ::close(null);
    }
    return in;
}

[[noreturn]] void reaper_main(int in, std::int64_t deadline, std::int64_t grace_ns,
                              std::int64_t early_ns) noexcept {
    // Its own process group: a signal to redcoord's group (Ctrl-C, kill -STOP -PGID, a shell's
    // job control) or to CMD's group does not reach it. SIGINT/SIGTERM/SIGHUP stay blocked
    // (inherited mask): only the pipe or SIGKILL end it.
    ::setpgid(0, 0);
    ::prctl(PR_SET_NAME, "redcoord-reaper");
    in = isolate_descriptors(in);

    pid_t target = 0;
    bool term_sent = false;  // CMD's group got SIGTERM (from us or the supervisor)
    bool signalled = false;  // we signalled the group ourselves
    bool orphaned = false;   // the pipe closed while armed: redcoord is gone
    std::int64_t kill_at = deadline;
    // SIGTERM early_window before SIGKILL; with no grace or window, SIGKILL alone.
    const auto term_at = [&] {
        return grace_ns > 0 && early_ns > 0 ? kill_at - early_ns : kill_at;
    };
    const auto finish = [&]() { ::_exit(signalled ? deadline_reaper::fired_status : 0); };

    alignas(message) char buf[sizeof(message) * 32];
    std::size_t have = 0;
    for (;;) {
        const std::int64_t now = mono_ns();
        if (target > 0) {
            if (!term_sent && now >= term_at() && term_at() < kill_at) {
                ::kill(-target, SIGTERM);
                term_sent = signalled = true;
            }
            if (now >= kill_at) {
                ::kill(-target, SIGKILL);
                signalled = true;
                finish();
            }
            if (orphaned && group_gone(target)) finish();
        } else if (orphaned) {
            finish();  // CMD never started
        }

        std::int64_t next = kill_at;
        if (!term_sent && term_at() < kill_at) next = term_at();
        if (target == 0) next = never;  // nothing to signal yet: wait for the pipe
        if (orphaned) {
            const timespec ts = to_timespec(std::min(next - now, orphan_poll_ns));
            ::nanosleep(&ts, nullptr);
            continue;
        }
        pollfd p{in, POLLIN, 0};
        const timespec ts = to_timespec(next - now);
        if (::ppoll(&p, 1, next == never ? nullptr : &ts, nullptr) <= 0) continue;
        const ssize_t n = ::read(in, buf + have, sizeof buf - have);
        if (n < 0) continue;  // EINTR
        if (n == 0) {
            // redcoord is gone (killed, or crashed) while CMD may still run: stop it now.
            orphaned = true;
            if (target > 0) {
                kill_at = std::min(kill_at, mono_ns() + grace_ns);
                if (!term_sent && grace_ns > 0) {
                    ::kill(-target, SIGTERM);
                    term_sent = signalled = true;
                }
            }
            continue;
        }
        have += static_cast<std::size_t>(n);
        std::size_t used = 0;
        for (; have - used >= sizeof(message); used += sizeof(message)) {
            message m;
            std::memcpy(&m, buf + used, sizeof m);
            switch (m.kind) {
                case msg_target:
                    if (target == 0) target = static_cast<pid_t>(m.value);
                    break;
                case msg_deadline:
                    // A renewal moves the deadline (the last one counts), unless the stop has
                    // begun: then nothing moves SIGKILL later.
                    if (term_sent)
                        kill_at = std::min(kill_at, m.value);
                    else
                        kill_at = m.value;
                    break;
                case msg_stopping:
                    term_sent = true;
                    kill_at = std::min(kill_at, m.value);
                    break;
                case msg_disarm: finish();
                default: break;
            }
        }
        for (std::size_t i = used; i < have; ++i) buf[i - used] = buf[i];
        have -= used;
    }
}

}  // namespace

deadline_reaper::deadline_reaper(steady_clock::time_point deadline, reaper_options opts) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0)
        throw error(std::string("pipe: ") + std::generic_category().message(errno));
    const std::int64_t grace_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(opts.grace).count();
    const std::int64_t early_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(opts.early_window).count();
    const pid_t pid = ::fork();
    if (pid < 0) {
        const int err = errno;
        ::close(p[0]);
        ::close(p[1]);
        throw error(std::string("fork: ") + std::generic_category().message(err));
    }
    if (pid == 0) {
        ::close(p[1]);
        reaper_main(p[0], ns_of(deadline), grace_ns, early_ns);
    }
    ::close(p[0]);
    pid_ = pid;
    fd_ = p[1];
    // Never block the supervisor on a reaper that does not read: see extend().
    ::fcntl(fd_, F_SETFL, O_NONBLOCK);
    last_sent_ = deadline;
}

deadline_reaper::~deadline_reaper() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    // A disarmed reaper exits at once. An armed one stops CMD's group first; CMD's
    // child_process has SIGKILLed and reaped it by now, so that takes a poll or two.
    for (int i = 0; i < 40 && !status_; ++i) {
        (void)fired();
        if (!status_) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

void deadline_reaper::send(std::uint32_t kind, std::int64_t value) const noexcept {
    if (fd_ < 0) return;
    const message m{kind, 0, value};
    // Atomic (< PIPE_BUF); EAGAIN (pipe full) drops it, EPIPE (reaper gone) is ignored.
    [[maybe_unused]] auto n = ::write(fd_, &m, sizeof m);
}

void deadline_reaper::announce_in_child() const noexcept { send(msg_target, ::getpid()); }

void deadline_reaper::set_target(pid_t pgid) const noexcept { send(msg_target, pgid); }

void deadline_reaper::extend(steady_clock::time_point deadline) noexcept {
    if (deadline == last_sent_) return;
    last_sent_ = deadline;
    send(msg_deadline, ns_of(deadline));
}

void deadline_reaper::stopping(steady_clock::time_point kill_at) const noexcept {
    send(msg_stopping, ns_of(kill_at));
}

void deadline_reaper::disarm() noexcept {
    send(msg_disarm, 0);
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    if (status_ || pid_ <= 0) return;
    int st = 0;
    pid_t r;
    do {
        r = ::waitpid(pid_, &st, 0);
    } while (r < 0 && errno == EINTR);
    status_ = r == pid_ && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

bool deadline_reaper::fired() noexcept {
    if (!status_ && pid_ > 0) {
        int st = 0;
        if (::waitpid(pid_, &st, WNOHANG) == pid_) status_ = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    }
    return status_ && *status_ == fired_status;
}

}  // namespace redcoord::cli
