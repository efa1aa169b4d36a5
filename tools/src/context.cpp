#include "context.hpp"

#include "exit_codes.hpp"

#include <redcoord/core/errors.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <mutex>

namespace redcoord::cli {

std::vector<endpoint> context::endpoints() const {
    return resolve_endpoints(choose_urls(opts.urls, std::getenv("REDCOORD_REDIS")),
                             std::getenv("REDCOORD_PASSWORD"),
                             endpoint_timeouts{opts.connect_timeout, opts.command_timeout},
                             std::getenv("REDCOORD_SENTINEL_PASSWORD"));
}

endpoint context::single_endpoint(std::string_view command) const {
    auto eps = endpoints();
    if (eps.size() != 1)
        throw invalid_argument("'" + std::string(command) + "' talks to one server; got " +
                               std::to_string(eps.size()) +
                               " (only 'lock' takes several: Redlock)");
    return eps.front();
}

void print_line(std::string_view line) {
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
}

namespace {

/// How write_stderr() reaches stderr without blocking.
class stderr_channel {
public:
    stderr_channel() {
        struct stat st {};
        if (::fstat(STDERR_FILENO, &st) != 0) return;
        if (S_ISSOCK(st.st_mode)) {
            socket_ = true;
        } else if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) {
            // A second open file description of the same pipe or terminal: O_NONBLOCK here does
            // not change how CMD and the shell see their stderr. If that fails (no /proc), the
            // blocking stderr is the fallback.
            const int fd = ::open("/proc/self/fd/2", O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
            if (fd >= 0) fd_ = fd;
        }
        // A regular file (or /dev/null) does not block on a slow reader: written as is.
    }

    void write(std::string_view text) noexcept {
        const std::lock_guard<std::mutex> g(mu_);
        if (unreported_ > 0) {
            const std::string note = "redcoord: " + std::to_string(unreported_) +
                                     " writes to stderr dropped (the reader did not keep up)\n";
            if (!put(note)) return drop();
            unreported_ = 0;
        }
        if (!put(text)) drop();
    }
    [[nodiscard]] std::uint64_t dropped() const noexcept { return dropped_.load(); }

private:
    // All of `text`, or false with nothing more written once the reader is behind. Lines up
    // to PIPE_BUF go to a pipe whole or not at all.
    bool put(std::string_view text) noexcept {
        while (!text.empty()) {
            const ssize_t n =
                socket_ ? ::send(fd_, text.data(), text.size(), MSG_DONTWAIT | MSG_NOSIGNAL)
                        : ::write(fd_, text.data(), text.size());
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return false;
            text.remove_prefix(static_cast<std::size_t>(n));
        }
        return true;
    }

    void drop() noexcept {
        ++unreported_;
        dropped_.fetch_add(1);
    }

    std::mutex mu_;
    int fd_ = STDERR_FILENO;
    bool socket_ = false;
    std::uint64_t unreported_ = 0;  // dropped since the last note; guarded by mu_
    std::atomic<std::uint64_t> dropped_{0};
};

stderr_channel& channel() {
    static stderr_channel c;
    return c;
}

}  // namespace

void write_stderr(std::string_view text) noexcept { channel().write(text); }

std::uint64_t stderr_dropped() noexcept { return channel().dropped(); }

void print_note(std::string_view message) {
    std::string s = "redcoord: ";
    s += message;
    s += '\n';
    write_stderr(s);
}

void emit_event(const context& ctx, const json_object& event) {
    if (ctx.opts.json) write_stderr(event.str() + "\n");
}

int interrupted_exit(const context& ctx, const std::string& name, int signo, int status) {
    emit_event(ctx, json_object()
                        .add("event", "interrupted")
                        .add("name", name)
                        .add("signal", signo)
                        .add("status", status));
    return signal_exit(signo);
}

namespace {
// A duration option's value, or CLI11's validation error naming the option.
std::chrono::milliseconds duration_option(const std::string& name, const std::string& text) {
    try {
        return parse_duration(text);
    } catch (const std::exception& e) {
        throw CLI::ValidationError(name, e.what());
    }
}
}  // namespace

CLI::Option* add_duration(CLI::App& app, const std::string& name, std::chrono::milliseconds& target,
                          const std::string& description, bool show_default) {
    auto* opt = app.add_option_function<std::string>(
        name, [&target, name](const std::string& text) { target = duration_option(name, text); },
        show_default ? description + " (default " + format_duration(target) + ")" : description);
    opt->type_name("DURATION");
    return opt;
}

CLI::Option* add_optional_duration(CLI::App& app, const std::string& name,
                                   std::optional<std::chrono::milliseconds>& target,
                                   const std::string& description) {
    auto* opt = app.add_option_function<std::string>(
        name, [&target, name](const std::string& text) { target = duration_option(name, text); },
        description);
    opt->type_name("DURATION");
    return opt;
}

}  // namespace redcoord::cli

namespace redcoord::cli {

std::string global_options_footer() {
    return "Global options (before or after the subcommand): --redis URL (repeatable; "
           "rediss:// for TLS),\n"
           "--json, --prefix P (key prefix, default redcoord:), --connect-timeout D, "
           "--command-timeout D.\n"
           "'redcoord --help' lists the URL forms, the environment and the exit statuses.";
}

}  // namespace redcoord::cli
