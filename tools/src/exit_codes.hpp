#pragma once
/// @file
/// The exit statuses of `redcoord`, and how errors map onto them. Printed in the footer of
/// `redcoord --help`; the README copies the same table.

#include <exception>
#include <string>

namespace redcoord::cli {

/// Exit statuses. Commands that run a CMD (`lock`, `elect`) otherwise exit with CMD's own
/// status (128 + N when CMD died of signal N), so redcoord's own codes sit in 120-127, where
/// ordinary programs rarely exit, as in timeout(1) and env(1).
enum exit_code : int {
    ok = 0,                ///< Success.
    no = 1,                ///< A negative answer: queue empty, delivery no longer held, no unicast
                           ///< waiter, no leader, barrier not reset (parties waiting).
    usage = 2,             ///< Bad option, duration, URL, name or argument.
    connection = 120,      ///< A server could not be reached or did not answer in time (or no
                           ///< Redlock majority could be reached).
    auth = 121,            ///< A server refused the password or user.
    server = 122,          ///< A server answered with an error (e.g. WRONGTYPE) or not in RESP.
    internal = 123,        ///< Anything else that went wrong inside redcoord.
    timed_out = 124,       ///< A wait ran out: `--wait` (lock not acquired / not elected),
                           ///< `--timeout` of wait, barrier and queue pop.
    lost = 125,            ///< The lock or leadership was lost while CMD ran; CMD was stopped.
                           ///< A barrier waiter dropped by `barrier --reset --force`.
    cannot_execute = 126,  ///< CMD was found but could not be executed.
    not_found = 127,       ///< CMD was not found.
};

/// 128 + `signo`: redcoord was stopped by SIGINT/SIGTERM/SIGHUP after releasing what it held.
[[nodiscard]] constexpr int signal_exit(int signo) noexcept { return 128 + signo; }

/// The table for `--help`: one line per code.
[[nodiscard]] std::string exit_code_table();

/// The code for an exception thrown while running a command (redcoord::error subclasses by
/// type; anything else is `internal`).
[[nodiscard]] int exit_code_for(const std::exception& e) noexcept;

}  // namespace redcoord::cli
