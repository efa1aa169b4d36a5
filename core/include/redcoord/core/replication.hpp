#pragma once
/// @file
/// Waiting for replicas to acknowledge writes (Redis `WAIT`), the building block of the
/// "synchronous enough" options that close async replication's failover windows (redis.io:
/// WAIT; Redisson's "wait for replica acknowledgement" for locks, seed 002).
///
/// What it gives: when `n` replicas acknowledged a write and Sentinel promotes one of them,
/// the write survives. What it does not: WAIT is not consensus; a failover may still pick a
/// replica that did not acknowledge, so ask for as many replicas as Sentinel could promote.

#include <redcoord/core/connection.hpp>
#include <redcoord/core/pool.hpp>

#include <chrono>
#include <cstddef>

namespace redcoord {

/// Sends `WAIT replicas timeout` on `c`: blocks until at least `replicas` replicas
/// acknowledged every write sent earlier *on this connection*, or `timeout` passes.
/// Returns how many replicas acknowledged (less than `replicas` after a timeout; never
/// throws for that). `timeout` is in milliseconds and must be > 0 (Redis would take zero as
/// "forever"); the reply deadline is `timeout` plus the endpoint's command_timeout.
/// @throws invalid_argument for a zero/negative timeout or `replicas` == 0;
/// @throws connection_error, timeout_error, reply_error, protocol_error from core.
/// Thread-safety: as connection (one thread at a time).
[[nodiscard]] std::size_t wait_replicas(connection& c, std::size_t replicas, std::chrono::milliseconds timeout);

/// A replication barrier for writes made on *other* connections of the same master (e.g.
/// inside a part that borrows its own lease): borrows a connection from `pool`, sends a
/// `PUBLISH` on the channel `<prefix>replication-barrier` (replicated like a write, touches
/// no key), then `WAIT`s on that connection. The replication stream is ordered, so a replica
/// that acknowledged the barrier also has every write the master applied before it, in
/// particular every write whose reply the caller had already received.
/// Returns how many replicas acknowledged; same timeout rules and errors as wait_replicas(),
/// plus pool_exhausted. Thread-safety: safe from any thread (uses its own lease).
[[nodiscard]] std::size_t replication_barrier(connection_pool& pool, std::size_t replicas,
                                              std::chrono::milliseconds timeout);

}  // namespace redcoord
