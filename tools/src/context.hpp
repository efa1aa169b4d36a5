#pragma once
/// @file
/// What every subcommand shares: the global options, the endpoints, output helpers, and the
/// CLI11 glue for durations.

#include "duration.hpp"
#include "endpoints.hpp"
#include "json.hpp"

#include <redcoord/core/endpoint.hpp>

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redcoord::cli {

/// Defaults shared by subcommands, so `queue` and `jobs` agree: deliveries or attempts before a
/// message or job goes dead (the reliable_queue default, which its workers use too), and how
/// many entries a listing (`queue dead`, `jobs list`) shows unless --limit says otherwise.
/// Commands that act on entries (`queue dead --requeue`, `jobs clean`) act on all by default.
inline constexpr unsigned default_max_attempts = 5;
inline constexpr std::size_t default_listing_limit = 100;

/// The help text every subcommand ends with: the global options it accepts too.
[[nodiscard]] std::string global_options_footer();

/// Options that apply to every subcommand.
struct global_options {
    std::vector<std::string> urls;                             ///< --redis (repeatable).
    bool json = false;                                         ///< --json.
    std::optional<std::chrono::milliseconds> connect_timeout;  ///< --connect-timeout, if given.
    std::optional<std::chrono::milliseconds> command_timeout;  ///< --command-timeout, if given.
    std::string prefix{"redcoord:"};  ///< --prefix (key prefix of every primitive).
};

/// Shared state of one invocation. The chosen subcommand stores its action in `run`.
struct context {
    global_options opts;
    /// The subcommand's action; returns the exit status. Runs after parsing.
    std::function<int()> run;

    /// Every endpoint from --redis / REDCOORD_REDIS / the default, with REDCOORD_PASSWORD.
    /// @throws invalid_argument for a bad URL.
    [[nodiscard]] std::vector<endpoint> endpoints() const;
    /// The one endpoint of a command that talks to a single server.
    /// @throws invalid_argument when several are given (only `lock` uses several: Redlock).
    [[nodiscard]] endpoint single_endpoint(std::string_view command) const;
};

/// Writes `line` and a newline to stdout and flushes (scripts read line by line).
void print_line(std::string_view line);
/// Writes `redcoord: <message>` to stderr, never blocking (see write_stderr()).
void print_note(std::string_view message);
/// With --json, writes `event` as one line to stderr (stdout belongs to CMD), never blocking.
void emit_event(const context& ctx, const json_object& event);
/// A supervising command whose CMD a signal `signo` interrupted: emits the `interrupted` event
/// for `name` with CMD's `status`, and returns the exit code (128 + signo).
int interrupted_exit(const context& ctx, const std::string& name, int signo, int status);
/// Writes `text` to stderr without ever blocking, so a reader that does not keep up (a full
/// pipe, a terminal stopped with Ctrl-S) cannot hold up redcoord while it holds a lease. A pipe,
/// FIFO or terminal is written through its own non-blocking open file description (stderr's
/// own flags, shared with CMD and the shell, are left alone); a socket with MSG_DONTWAIT; a
/// regular file directly. What does not fit is dropped and counted; the count is reported in
/// a note before the next text that fits. Thread-safe.
void write_stderr(std::string_view text) noexcept;
/// Lines (or parts of lines) dropped by write_stderr() so far.
[[nodiscard]] std::uint64_t stderr_dropped() noexcept;

/// Adds a duration option (`500ms`, `20s`, `2m`) writing into `target`; a bad value is a
/// usage error naming the option.
CLI::Option* add_duration(CLI::App& app, const std::string& name, std::chrono::milliseconds& target,
                          const std::string& description, bool show_default = true);

/// The same for an option whose absence matters: `target` stays empty unless it is given.
CLI::Option* add_optional_duration(CLI::App& app, const std::string& name,
                                   std::optional<std::chrono::milliseconds>& target,
                                   const std::string& description);

/// Registers the subcommands of each group (one file per group).
void add_lock_command(CLI::App& app, context& ctx);
void add_limit_command(CLI::App& app, context& ctx);
void add_rwlock_command(CLI::App& app, context& ctx);
void add_election_commands(CLI::App& app, context& ctx);
void add_signal_commands(CLI::App& app, context& ctx);
void add_queue_commands(CLI::App& app, context& ctx);
void add_jobs_commands(CLI::App& app, context& ctx);
/// `jobs work` (jobs_work.cpp), under the `jobs` subcommand `jobs`.
void add_jobs_work_command(CLI::App& jobs, context& ctx);
void add_acl_command(CLI::App& app, context& ctx);
void add_inspect_command(CLI::App& app, context& ctx);
void add_dashboard_command(CLI::App& app, context& ctx);

}  // namespace redcoord::cli
