#include "os_signals.hpp"

#include <redcoord/core/errors.hpp>

#include <poll.h>
#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX kill, sigaction, sigset_t
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <string>
#include <system_error>
#include <thread>

namespace redcoord::cli {
namespace {

sigset_t handled_set() {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGINT);
    sigaddset(&s, SIGTERM);
    sigaddset(&s, SIGHUP);
    sigaddset(&s, SIGCHLD);
    return s;
}

}  // namespace

void block_signals() {
    const sigset_t s = handled_set();
    pthread_sigmask(SIG_BLOCK, &s, nullptr);
    ::signal(SIGPIPE, SIG_IGN);
}

void restore_signals_in_child() noexcept {
    ::signal(SIGPIPE, SIG_DFL);
    sigset_t empty;
    sigemptyset(&empty);
    pthread_sigmask(SIG_SETMASK, &empty, nullptr);
}

signal_source::signal_source() {
    const sigset_t s = handled_set();
    fd_ = ::signalfd(-1, &s, SFD_NONBLOCK | SFD_CLOEXEC);
    if (fd_ < 0) throw error(std::string("signalfd: ") + std::generic_category().message(errno));
}

signal_source::~signal_source() {
    if (fd_ >= 0) ::close(fd_);
}

std::optional<int> signal_source::read() noexcept {
    signalfd_siginfo info{};
    const ssize_t n = ::read(fd_, &info, sizeof info);
    if (n != static_cast<ssize_t>(sizeof info)) return std::nullopt;
    return static_cast<int>(info.ssi_signo);
}

std::optional<int> signal_source::wait_termination(std::chrono::milliseconds timeout,
                                                   int wake_fd) noexcept {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        while (auto sig = read()) {
            if (*sig != SIGCHLD) return sig;
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() < 0) return std::nullopt;
        pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_fd, POLLIN, 0}};
        const int r = ::poll(fds, wake_fd >= 0 ? 2 : 1,
                             static_cast<int>(std::min<std::int64_t>(left.count(), 1000)));
        if (r > 0 && wake_fd >= 0 && (fds[1].revents & POLLIN)) {
            while (auto sig = read()) {
                if (*sig != SIGCHLD) return sig;
            }
            return std::nullopt;
        }
    }
}

wakeup::wakeup() {
    fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd_ < 0) throw error(std::string("eventfd: ") + std::generic_category().message(errno));
}

wakeup::~wakeup() {
    if (fd_ >= 0) ::close(fd_);
}

void wakeup::notify() const noexcept {
    const std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(fd_, &one, sizeof one);
}

void wakeup::drain() const noexcept {
    std::uint64_t v = 0;
    [[maybe_unused]] auto n = ::read(fd_, &v, sizeof v);
}

void exit_on_termination_signal() {
    std::thread([] {
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, SIGINT);
        sigaddset(&s, SIGTERM);
        sigaddset(&s, SIGHUP);
        int sig = 0;
        while (sigwait(&s, &sig) != 0) {}
        std::fflush(stdout);
        ::_exit(128 + sig);
    }).detach();
}

}  // namespace redcoord::cli
