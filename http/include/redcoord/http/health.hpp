#pragma once
/// @file
/// What `/readyz` answers: every configured Redis endpoint PINGed under one deadline, the
/// answer 200 when all replied PONG in time, else 503 naming each failing endpoint (its
/// password masked). metrics_server serves it; the pieces are public so a service with its own
/// HTTP stack can answer the same way.

#include <redcoord/core/export.hpp>
#include <redcoord/core/fan_out.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/http/route.hpp>

#include <chrono>
#include <span>
#include <string>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord {

/// One endpoint's part of a readiness check.
///
/// Thread-safety: a plain value type.
struct readiness_entry {
    std::string endpoint;  ///< The endpoint, printed with its passwords masked.
    bool ready = false;    ///< True when it answered PONG within the deadline.
    /// Why not, when not ready (timeout, connection failure, the server's error reply);
    /// otherwise empty. Never holds a password.
    std::string detail;
    std::chrono::microseconds latency{0};  ///< From the start of the check to this outcome.
};

/// Reads a PING fan-out's results (fan_out() over `pools`, in the same order) as readiness
/// entries: ready only for a `PONG` reply; an error reply (`NOAUTH`, `LOADING`), a timeout or
/// a failed connection is not ready.
/// @throws invalid_argument when the two spans differ in length.
[[nodiscard]] std::vector<readiness_entry> readiness_entries(
    std::span<connection_pool* const> pools, std::span<const node_result> results);

/// The `/readyz` answer for `entries`: 200 `ready` when every entry is ready (also when there
/// are none), else 503 `not ready`; then one line per entry, `ok` or `FAIL`, its endpoint, its
/// latency in milliseconds and, for a failure, why.
[[nodiscard]] http_response readiness_answer(std::span<const readiness_entry> entries);

/// PINGs every pool at once (fan_out(), so a dead or hung server costs at most `timeout`, not
/// one timeout each) and returns readiness_entries(). Runs on the caller's thread and blocks it
/// for at most about `timeout` (a connect still under way at the deadline is not waited for:
/// it goes on in the pool's background dial and counts as not ready).
/// @throws invalid_argument for a null pool or a `timeout` that is not > 0.
[[nodiscard]] std::vector<readiness_entry> check_readiness(std::span<connection_pool* const> pools,
                                                           std::chrono::milliseconds timeout);

}  // namespace redcoord
REDCOORD_API_END
