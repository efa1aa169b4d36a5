#pragma once
/// @file
/// Servers whose clocks run at another rate and clients whose wall clocks jump (libfaketime),
/// for the clock-drift cases of the Redlock page ("Distributed Locks with Redis", safety
/// arguments) and the clock jumps of Kleppmann's critique.

#include <redcoord/core/export.hpp>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord::testing {

/// A server_options::launcher that runs redis-server with its wall clock (and so its key
/// expiry) running `rate` times as fast as the real one from its start, e.g. 1.02 or 1.5
/// (libfaketime's `FAKETIME="+0 xRATE"`).
///
/// Debian's redis-server allocates with jemalloc, which libfaketime cannot start beside
/// (libfaketime issues 130 and 327: both intercept each other's start-up and give up), so
/// tcmalloc (libtcmalloc-minimal4) is preloaded first and serves the allocations.
/// The launcher is `env LD_PRELOAD=... FAKETIME=... `: it execs, so the PID stays the server's.
/// @throws redcoord::error when libfaketime or tcmalloc is not installed (scripts/bootstrap
///         installs both), or `rate` is not positive.
[[nodiscard]] std::vector<std::string> clock_rate_launcher(double rate);

/// A launcher (for local_network::start() or server_options::launcher) that runs a program whose
/// wall clock (CLOCK_REALTIME, time(), gettimeofday()) is offset by what `offset_file` says at
/// each reading, while its monotonic clock stays true: the steps NTP or an operator make.
/// write_clock_offset() moves it while the program runs (libfaketime's
/// FAKETIME_TIMESTAMP_FILE with FAKETIME_NO_CACHE and DONT_FAKE_MONOTONIC, the thread-safe
/// libfaketimeMT). The file is written with a zero offset if it does not exist.
/// @throws redcoord::error when libfaketime is not installed or the file cannot be written.
[[nodiscard]] std::vector<std::string> wall_clock_jump_launcher(
    const std::filesystem::path& offset_file);

/// Sets the wall-clock offset (seconds, either sign) of the programs started with
/// wall_clock_jump_launcher(`offset_file`); they see it at their next clock reading. The file
/// is replaced atomically (written beside it, then renamed).
/// @throws redcoord::error when the file cannot be written.
void write_clock_offset(const std::filesystem::path& offset_file, std::chrono::seconds offset);

}  // namespace redcoord::testing
REDCOORD_API_END
