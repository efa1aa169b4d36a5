#pragma once
/// @file
/// One command to N independent servers at once, replies collected under one deadline:
/// the "multiplexing" of the redis.io page "Distributed Locks with Redis" (section "Performance,
/// crash recovery and fsync"; docs/architecture.md).

#include <redcoord/core/export.hpp>
#include <redcoord/core/node_result.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/core/reply.hpp>
#include <redcoord/core/script.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord {

namespace detail {

/// Fan-out modes for redcoord's own lock releases. Not a stable API: leave at the defaults.
struct fan_out_tuning {
    /// Send to every node (connecting where needed, within `timeout`) and return without
    /// waiting for any reply: the sent nodes stay `pending`, and each connection's next user
    /// skips its reply. For best-effort writes such as a lock release whose outcome nobody
    /// reads. `stop_when` is not consulted. A script sent as EVALSHA that meets a flushed
    /// cache (SCRIPT FLUSH) is re-sent as EVAL by the reader that skips its NOSCRIPT (see
    /// script::send), so the write still happens, after what that reader sent; each such
    /// node keeps a copy of the EVAL form until then (one allocation per node).
    bool detach = false;
    /// With `stop_when`: the nodes that had not been sent the command when the fan-out
    /// stopped still get it (those without an idle connection after a lease, within
    /// `timeout`), without waiting for their replies, which each connection's next user
    /// skips (re-running a flushed script as EVAL, as `detach` does). For writes that every
    /// node must receive but whose outcome a majority decides, such as a Redlock release.
    bool reach_all = false;
};

}  // namespace detail

/// Options of one fan-out.
struct fan_out_options {
    /// Deadline for the whole fan-out, from its start: connects, writes and replies of all
    /// nodes share it. Must be > 0.
    std::chrono::milliseconds timeout{50};
    /// Called after each node's outcome with all results so far; returning true stops the
    /// fan-out at once (the rest stay `pending`, their connections are kept and drained
    /// later). A pending node whose script met a flushed cache (NOSCRIPT) is not re-run:
    /// a round decided early is an acquire or an extend, for which "did not run" is the
    /// safe side. Empty means wait for every node or the deadline.
    std::function<bool(std::span<const node_result>)> stop_when;
    /// Internal; leave at its default (see detail::fan_out_tuning).
    detail::fan_out_tuning tuning{};
};

/// Sends `argv` to every pool at once and collects the replies, using non-blocking I/O and
/// poll() on all sockets together, so a dead or hung node costs at most the deadline, never
/// N times it. Never throws for a node's failure: each failure is a result. Results are in
/// the order of `pools`.
///
/// Nodes with an idle pooled connection get the command first; the others then get a lease,
/// each sent as soon as its lease comes: a new connection, opened by the pool in the
/// background with the endpoint's whole `connect_timeout` (all needed connects start at
/// once; a connect still under way is `connecting`, and the next fan-out finds its
/// connection), or, when every connection of that pool is leased, the first one returned,
/// waiting at most the pool's `borrow_timeout`. No lease is taken in the deadline's last
/// quarter: a command sent then would likely time out unanswered (an unknown outcome),
/// where "nothing was sent" is clean and can be sent again. A pool that stays full is
/// `pool_exhausted`, never `connection_failed`. No thread is started per round.
///
/// Thread-safety: safe to call concurrently (each call leases its own connections).
/// @throws invalid_argument when `pools` contains a null pointer or the timeout is not > 0.
[[nodiscard]] std::vector<node_result> fan_out(std::span<connection_pool* const> pools,
                                               const std::vector<std::string>& argv,
                                               const fan_out_options& opts);

/// Runs script `s` on every pool at once, as fan_out() above: `EVALSHA` on connections that
/// have seen the script run, `EVAL` on the others (it loads the script in the same round
/// trip), and `EVAL` again for a node that answers NOSCRIPT (SCRIPT FLUSH), so a node's part
/// never silently fails to run for want of a cached script.
/// @throws invalid_argument as fan_out() above.
[[nodiscard]] std::vector<node_result> fan_out(std::span<connection_pool* const> pools,
                                               const script& s,
                                               std::span<const std::string_view> keys,
                                               std::span<const std::string_view> args,
                                               const fan_out_options& opts);

}  // namespace redcoord

REDCOORD_API_END
