#include <redcoord/core/errors.hpp>
#include <redcoord/testing/process.hpp>

#include <algorithm>
#include <string_view>

#include <fcntl.h>
#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX kill, sigaction, sigset_t
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <thread>
#include <utility>

extern char** environ;

namespace redcoord::testing {
namespace {
int decode(int st) {
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return -1;
}
}  // namespace

process::process(std::vector<std::string> argv, process_options opts) {
    if (argv.empty()) throw invalid_argument("process needs a program");
    // Everything the child needs is built before fork: only async-signal-safe calls after it.
    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    // An entry of opts.env replaces the parent's entry of the same name: appended after it,
    // the child's getenv() would still find the parent's first.
    auto name_of = [](std::string_view entry) { return entry.substr(0, entry.find('=')); };
    std::vector<std::string> env_store;
    for (char** e = environ; *e; ++e) {
        const std::string_view entry(*e);
        const bool replaced =
            std::any_of(opts.env.begin(), opts.env.end(),
                        [&](const std::string& o) { return name_of(o) == name_of(entry); });
        if (!replaced) env_store.emplace_back(entry);
    }
    for (auto& e : opts.env) env_store.push_back(e);
    std::vector<char*> envp;
    envp.reserve(env_store.size() + 1);
    for (auto& e : env_store) envp.push_back(e.data());
    envp.push_back(nullptr);
    int out_fd = -1;
    if (!opts.output_file.empty()) {
        out_fd = ::open(opts.output_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (out_fd < 0)
            throw error("cannot open " + opts.output_file + ": " +
                        std::generic_category().message(errno));
    }
    int err_pipe[2];
    if (::pipe2(err_pipe, O_CLOEXEC) != 0) throw error("pipe2 failed");
    const pid_t parent = ::getpid();
    pid_t pid = ::fork();
    if (pid < 0) {
        ::close(err_pipe[0]);
        ::close(err_pipe[1]);
        if (out_fd >= 0) ::close(out_fd);
        throw error(std::string("fork failed: ") + std::generic_category().message(errno));
    }
    if (pid == 0) {
        if (opts.die_with_parent) {
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (::getppid() != parent) ::_exit(127);
        }
        if (opts.own_process_group) ::setpgid(0, 0);
        if (out_fd >= 0) {
            ::dup2(out_fd, 1);
            ::dup2(out_fd, 2);
        }
        sigset_t none;
        sigemptyset(&none);
        ::pthread_sigmask(SIG_SETMASK, &none, nullptr);
        ::execvpe(args[0], args.data(), envp.data());
        int e = errno;
        [[maybe_unused]] auto n = ::write(err_pipe[1], &e, sizeof e);
        ::_exit(127);
    }
    ::close(err_pipe[1]);
    if (out_fd >= 0) ::close(out_fd);
    int child_errno = 0;
    ssize_t got = ::read(err_pipe[0], &child_errno, sizeof child_errno);
    ::close(err_pipe[0]);
    pid_ = pid;
    if (got == sizeof child_errno) {
        wait();
        pid_ = -1;
        throw error("cannot start " + argv[0] + ": " +
                    std::generic_category().message(child_errno));
    }
}

process::process(process&& o) noexcept : pid_(std::exchange(o.pid_, -1)), status_(o.status_) {}

process& process::operator=(process&& o) noexcept {
    if (this != &o) {
        kill();
        pid_ = std::exchange(o.pid_, -1);
        status_ = o.status_;
    }
    return *this;
}

process::~process() { kill(); }

void process::signal(int sig) const noexcept {
    if (pid_ > 0 && !status_) ::kill(pid_, sig);
}

void process::kill() noexcept {
    if (pid_ <= 0 || status_) return;
    ::kill(pid_, SIGKILL);
    wait();
}

std::optional<int> process::try_wait() noexcept {
    if (status_ || pid_ <= 0) return status_;
    int st = 0;
    pid_t r = ::waitpid(pid_, &st, WNOHANG);
    if (r == pid_) status_ = decode(st);
    return status_;
}

std::optional<int> process::wait_for(std::chrono::milliseconds timeout) noexcept {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        if (auto s = try_wait()) return s;
        if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
}

int process::wait() noexcept {
    if (status_ || pid_ <= 0) return status_.value_or(-1);
    int st = 0;
    while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {}
    status_ = decode(st);
    return *status_;
}

bool process::running() noexcept { return pid_ > 0 && !try_wait(); }

}  // namespace redcoord::testing
