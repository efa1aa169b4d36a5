#pragma once
/// @file
/// Servers whose clocks run at another rate (libfaketime), for the clock-drift cases of the
/// Redlock page ("Distributed Locks with Redis", safety arguments) and Kleppmann's critique.

#include <redcoord/core/export.hpp>

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

}  // namespace redcoord::testing
REDCOORD_API_END
