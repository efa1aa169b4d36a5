#include "child_process.hpp"

#include "os_signals.hpp"

#include <redcoord/core/errors.hpp>

#include <fcntl.h>
#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX kill, sigaction, sigset_t
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <system_error>

extern char** environ;

namespace redcoord::cli {
namespace {

// Gives the terminal's foreground to process group `pgid`, with SIGTTOU blocked (a process
// outside the foreground group may not change it otherwise). Async-signal-safe.
void give_terminal(pid_t pgid) noexcept {
    sigset_t ttou, old;
    sigemptyset(&ttou);
    sigaddset(&ttou, SIGTTOU);
    pthread_sigmask(SIG_BLOCK, &ttou, &old);
    ::tcsetpgrp(STDIN_FILENO, pgid);
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

int decode_status(int st) {
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return 1;
}

// Moves the replacement descriptors out of the way first (one may be numbered 0..3 itself),
// then onto 0..3; dup2 clears close-on-exec on the copies CMD keeps. Async-signal-safe.
void redirect_in_child(const child_stdio& stdio) noexcept {
    std::array<int, 4> moved{-1, -1, -1, -1};
    for (std::size_t i = 0; i < moved.size(); ++i)
        if (stdio.fds[i] >= 0) moved[i] = ::fcntl(stdio.fds[i], F_DUPFD_CLOEXEC, 10);
    for (std::size_t i = 0; i < moved.size(); ++i)
        if (moved[i] >= 0) ::dup2(moved[i], static_cast<int>(i));
}

}  // namespace

child_process::child_process(const std::vector<std::string>& argv,
                             const std::vector<std::string>& extra_env,
                             const deadline_reaper* reaper, const child_stdio& stdio) {
    if (argv.empty()) throw invalid_argument("no command given after --");
    // Everything the child needs is built before fork: after fork in a threaded process only
    // async-signal-safe calls are allowed.
    std::map<std::string, std::string> env;
    for (char** e = environ; e && *e; ++e) {
        std::string s(*e);
        env[s.substr(0, s.find('='))] = s;
    }
    for (const auto& s : extra_env) env[s.substr(0, s.find('='))] = s;
    std::vector<std::string> env_strings;
    env_strings.reserve(env.size());
    for (auto& [k, v] : env) env_strings.push_back(v);
    std::vector<char*> envp, args;
    envp.reserve(env_strings.size() + 1);
    args.reserve(argv.size() + 1);
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> argv_copy = argv;
    for (auto& s : argv_copy) args.push_back(s.data());
    args.push_back(nullptr);

    // Orphaned members of CMD's group are re-parented to redcoord instead of an init that may
    // never reap them, so group_alive() does not see zombies for ever (see try_reap()).
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    int report[2];
    if (::pipe2(report, O_CLOEXEC) != 0)
        throw error(std::string("pipe: ") + std::generic_category().message(errno));
    // When redcoord runs in the terminal's foreground, CMD's group takes the foreground (as a
    // shell does for a job), so an interactive CMD can read the terminal and gets Ctrl-C itself.
    const bool foreground =
        stdio.fds[0] < 0 && ::isatty(STDIN_FILENO) && ::tcgetpgrp(STDIN_FILENO) == ::getpgrp();
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
        const int err = errno;
        ::close(report[0]);
        ::close(report[1]);
        throw error(std::string("fork: ") + std::generic_category().message(err));
    }
    if (pid == 0) {
        ::close(report[0]);
        ::setpgid(0, 0);
        if (reaper) reaper->announce_in_child();  // before exec: CMD never runs unknown to it
        if (foreground)
            give_terminal(::getpid());  // also here: CMD may read before the parent runs
        ::prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (::getppid() != parent) ::_exit(128 + SIGTERM);  // parent died before prctl
        restore_signals_in_child();
        // The report pipe may be numbered 3: out of the way of CMD's descriptors first.
        const int rep = stdio.fds[3] >= 0 ? ::fcntl(report[1], F_DUPFD_CLOEXEC, 10) : report[1];
        redirect_in_child(stdio);
        ::execvpe(args[0], args.data(), envp.data());
        const int err = errno;
        [[maybe_unused]] auto n = ::write(rep, &err, sizeof err);
        ::_exit(127);
    }
    ::close(report[1]);
    ::setpgid(pid, pid);  // also here, so the group exists before we ever signal it
    pid_ = pid;
    if (foreground) {
        give_terminal(pid);
        took_terminal_ = true;
    }
    int err = 0;
    ssize_t n;
    do {
        n = ::read(report[0], &err, sizeof err);
    } while (n < 0 && errno == EINTR);
    ::close(report[0]);
    if (n == static_cast<ssize_t>(sizeof err)) {
        int st = 0;
        ::waitpid(pid, &st, 0);
        pid_ = -1;
        if (took_terminal_) give_terminal(::getpgrp());
        const int code = (err == ENOENT || err == ENOTDIR) ? 127 : 126;
        throw exec_failure(code,
                           "cannot run '" + argv[0] + "': " + std::generic_category().message(err));
    }
}

child_process::~child_process() {
    if (pid_ > 0 && !status_) {
        signal_group(SIGKILL);
        int st = 0;
        ::waitpid(pid_, &st, 0);
    }
    if (pid_ > 0) {
        int st = 0;
        while (::waitpid(-pid_, &st, WNOHANG) > 0) {}
    }
    if (took_terminal_) give_terminal(::getpgrp());
}

std::optional<int> child_process::try_reap() noexcept {
    if (pid_ <= 0) return status_;
    // Reap every ended member of CMD's group: CMD and, as subreaper, members that outlived
    // their parent. Not waitpid(-1): the deadline reaper is redcoord's child too, and its
    // status belongs to deadline_reaper.
    for (;;) {
        int st = 0;
        const pid_t r = ::waitpid(-pid_, &st, WNOHANG);
        if (r <= 0) break;
        if (r == pid_) status_ = decode_status(st);
    }
    return status_;
}

void child_process::signal_group(int sig) const noexcept {
    if (pid_ > 0) ::kill(-pid_, sig);
}

bool child_process::group_alive() const noexcept { return pid_ > 0 && ::kill(-pid_, 0) == 0; }

}  // namespace redcoord::cli
