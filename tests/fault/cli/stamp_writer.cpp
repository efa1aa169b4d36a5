// A stand-in for leader-only work in the CLI deadline tests: appends timestamped lines to FILE
// (O_APPEND, one write(2) per line, so the file's order is the order the writes happened in)
// until it is stopped, so a checker can see whether two CMDs ever wrote at the same time.
//
//   cli_stamp_writer FILE ID [ignore-term]
//   start ID MONO_NS DEADLINE_MS PID   once (DEADLINE_MS from REDCOORD_DEADLINE_MS, -1 if unset)
//   w ID MONO_NS                       every 5 ms
//   term ID MONO_NS                    on SIGTERM, then exit 0 (with ignore-term: SIGTERM is
//                                      ignored, so only SIGKILL stops it)
// MONO_NS is CLOCK_MONOTONIC, the clock of std::chrono::steady_clock in the tests.
#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

int out_fd = -1;
const char* id = "";

long long mono_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

void on_term(int) {
    // snprintf is not async-signal-safe in general, but this process does nothing else at the
    // same time that could hold its locks: the main loop only sleeps and writes.
    char buf[128];
    const int n = std::snprintf(buf, sizeof buf, "term %s %lld\n", id, mono_ns());
    [[maybe_unused]] auto r = ::write(out_fd, buf, static_cast<size_t>(n));
    ::_exit(0);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3 && !(argc == 4 && std::strcmp(argv[3], "ignore-term") == 0)) return 2;
    id = argv[2];
    out_fd = ::open(argv[1], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (out_fd < 0) return 3;
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, nullptr);  // the handler never interrupts a half-built line
    struct sigaction sa {};
    sa.sa_handler = argc == 4 ? SIG_IGN : on_term;
    sigaction(SIGTERM, &sa, nullptr);
    const char* d = std::getenv("REDCOORD_DEADLINE_MS");
    char buf[160];
    int n = std::snprintf(buf, sizeof buf, "start %s %lld %s %d\n", id, mono_ns(), d ? d : "-1",
                          static_cast<int>(::getpid()));
    [[maybe_unused]] auto r = ::write(out_fd, buf, static_cast<size_t>(n));
    sigset_t none;
    sigemptyset(&none);
    for (;;) {
        n = std::snprintf(buf, sizeof buf, "w %s %lld\n", id, mono_ns());
        r = ::write(out_fd, buf, static_cast<size_t>(n));
        // SIGTERM is taken only here, between lines.
        sigprocmask(SIG_SETMASK, &none, nullptr);
        timespec ts{0, 5000000};
        ::nanosleep(&ts, nullptr);
        sigprocmask(SIG_BLOCK, &all, nullptr);
    }
}
