#pragma once
/// @file
/// Waiting for replicas to acknowledge writes (Redis `WAIT`), the building block of the
/// "synchronous enough" options that close async replication's failover windows
/// (https://redis.io/commands/wait/; Redisson also waits for replica acknowledgement after
/// taking a lock).
///
/// What it gives: when `n` replicas acknowledged a write and Sentinel promotes one of them,
/// the write survives. What it does not: WAIT is not consensus; a failover may still pick a
/// replica that did not acknowledge, so ask for as many replicas as Sentinel could promote.

#include <redcoord/core/connection.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/core/reply.hpp>
#include <redcoord/core/script.hpp>

#include <chrono>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

REDCOORD_API_BEGIN
namespace redcoord {

/// Sends `WAIT replicas timeout` on `c`: blocks until at least `replicas` replicas
/// acknowledged every write sent earlier *on this connection*, or `timeout` passes.
/// Returns how many replicas acknowledged (less than `replicas` after a timeout; never
/// throws for that). `timeout` is in milliseconds and must be > 0 (Redis would take zero as
/// "forever"); the reply deadline is `timeout` plus the endpoint's command_timeout.
/// @throws invalid_argument for a zero/negative timeout or `replicas` == 0;
/// @throws connection_error, timeout_error, reply_error, protocol_error from core.
/// Thread-safety: as connection (one thread at a time).
[[nodiscard]] std::size_t wait_replicas(connection& c, std::size_t replicas,
                                        std::chrono::milliseconds timeout);

/// A replication barrier for writes made on *other* connections of the same master (for
/// example inside a part that borrows its own lease): borrows a connection from `pool`, sends a
/// `PUBLISH` on the channel `<prefix>replication-barrier` (replicated like a write, touches
/// no key), then `WAIT`s on that connection. The replication stream is ordered, so a replica
/// that acknowledged the barrier also has every write the master applied before it, in
/// particular every write whose reply the caller had already received.
/// Returns how many replicas acknowledged; same timeout rules and errors as wait_replicas(),
/// plus pool_exhausted. Thread-safety: safe from any thread (uses its own lease).
/// On a Cluster pool the barrier covers one shard, the one that serves `key` (WAIT counts the
/// replicas of the master it runs on); `key` is ignored elsewhere.
[[nodiscard]] std::size_t replication_barrier(connection_pool& pool, std::size_t replicas,
                                              std::chrono::milliseconds timeout,
                                              std::string_view key = {});

/// Fewer replicas than required acknowledged a write within the replica timeout. The write
/// itself was applied by the master (its reply arrived), but it is not yet known to be on
/// `required` replicas, so a failover may lose it: the caller may retry (at-least-once) or
/// undo it. A timeout_error, so callers that retry on timeouts retry on this too.
class replication_timeout : public timeout_error {
public:
    /// `acknowledged` replicas confirmed, `required` were asked for; `what` explains.
    replication_timeout(const std::string& what, std::size_t acknowledged, std::size_t required)
        : timeout_error(what), acknowledged_(acknowledged), required_(required) {}
    /// How many replicas acknowledged (WAIT's reply).
    [[nodiscard]] std::size_t acknowledged() const noexcept { return acknowledged_; }
    /// How many were required.
    [[nodiscard]] std::size_t required() const noexcept { return required_; }

private:
    std::size_t acknowledged_;
    std::size_t required_;
};

/// The reply of a write followed by WAIT, and WAIT's count.
struct replicated_reply {
    reply result;          ///< The write's reply (never an error reply: those throw).
    std::size_t acks = 0;  ///< Replicas that acknowledged it (WAIT's reply; may be < asked).
};

/// Sends the command `argv` and `WAIT replicas timeout` on `c` in one write (one round trip
/// plus the replication wait) and reads both replies: the write's reply is read with the
/// endpoint's command_timeout, WAIT's with `timeout` + command_timeout (zero command_timeout:
/// no deadline). Redis answers the write at once and holds only WAIT, so the write's reply
/// tells its outcome even when WAIT then times out (redis.io: WAIT; the shape of
/// election's round + WAIT).
/// @return the write's reply and how many replicas acknowledged it (fewer than `replicas`
///         after `timeout` milliseconds; not an error here, callers decide).
/// @throws invalid_argument for empty `argv`, `replicas` == 0 or `timeout` <= 0;
/// @throws reply_error when the write or WAIT is answered with an error (both replies are
///         read first, so the connection stays usable);
/// @throws connection_error, timeout_error, protocol_error on transport failures (the
///         connection is poisoned; the write's outcome is unknown unless its reply arrived).
/// Thread-safety: as connection (one thread at a time).
[[nodiscard]] replicated_reply command_then_wait(connection& c,
                                                 std::span<const std::string_view> argv,
                                                 std::size_t replicas,
                                                 std::chrono::milliseconds timeout);

/// The same for a Lua script: `EVALSHA` + `WAIT` in one write; on NOSCRIPT (the WAIT of that
/// write then had nothing new to wait for) sends `EVAL` + `WAIT` once more. Same return
/// value, rules and errors as command_then_wait() (a Lua error is a reply_error).
[[nodiscard]] replicated_reply run_then_wait(connection& c, const script& s,
                                             std::span<const std::string_view> keys,
                                             std::span<const std::string_view> args,
                                             std::size_t replicas,
                                             std::chrono::milliseconds timeout);

namespace detail {
/// run_then_wait() whose two reads also end by `until` (steady clock), for a round that must
/// not outlive a lease (an election round with replicas). Internal; not a stable API.
/// @throws as run_then_wait(); timeout_error (connection poisoned) once `until` passes.
[[nodiscard]] replicated_reply run_then_wait_until(connection& c, const script& s,
                                                   std::span<const std::string_view> keys,
                                                   std::span<const std::string_view> args,
                                                   std::size_t replicas,
                                                   std::chrono::milliseconds timeout,
                                                   std::chrono::steady_clock::time_point until);
}  // namespace detail

}  // namespace redcoord

REDCOORD_API_END
