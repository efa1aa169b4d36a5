#pragma once
// The I/O of a lock round, without decisions: one pooled connection (with WAIT for replicas)
// for the single-instance lock, core's fan_out over N pools for Redlock. A transport sends a
// round's command and feeds each node's outcome back into the round (lock_engine.hpp).

#include "lock_engine.hpp"

#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/pool.hpp>

#include <chrono>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace redcoord::detail {

// How one round's requests may run.
struct round_io {
    // A timed acquire's deadline: the single instance bounds each request by what is left
    // of it (at least 10 ms, a loaded machine's round trip, so the attempt a wait makes at
    // its deadline has a chance), capped by command_timeout; nullopt: the endpoint's timeouts.
    std::optional<std::chrono::steady_clock::time_point> deadline;
    // Decided at a majority, and still sent to every node (a release).
    bool reach_all = false;
    // Only these nodes (a resend to nodes nothing reached); empty: every node.
    std::span<const std::size_t> only{};
};

class lock_transport {
public:
    virtual ~lock_transport() = default;

    [[nodiscard]] virtual std::span<connection_pool* const> pools() const noexcept = 0;
    // Sends the round's command and feeds every node's outcome into `round` (a fan-out stops
    // once the round is decided). Returns the failure this transport reports to the caller
    // itself (the single-instance lock's connection, timeout and reply errors), else null.
    virtual std::exception_ptr run(lock_round& round, const round_io& io) = 0;
    // Runs the (give-back) round's command on `nodes` (step 5), best effort, feeding what it
    // learned into `round` (nodes nothing reached as busy / connecting: the engine resends).
    virtual void give_back(lock_round& round, std::span<const std::size_t> nodes,
                           const round_io& io) noexcept = 0;
    // Sends the round's command to every node (io.only: those) without waiting for the
    // replies: sent nodes are fed as pending, nodes nothing reached as busy / connecting /
    // unreachable, so the engine can say which to send again.
    virtual void send(lock_round& round, const round_io& io) noexcept = 0;
    // Where to listen for release notifications.
    [[nodiscard]] virtual std::vector<endpoint> waiter_endpoints() const = 0;
};

// One Redis instance; with replicas > 0 acquisitions and extensions are followed by
// `WAIT replicas replica_timeout` in the same write. Its failures are exceptions: the
// caller's (connection_error, timeout_error, pool_exhausted, reply_error, protocol_error;
// outcome_unknown for an extension or release whose reply was lost).
std::unique_ptr<lock_transport> single_transport(connection_pool& pool, std::size_t replicas,
                                                 std::chrono::milliseconds replica_timeout);

// N independent masters, each bounded by `node_timeout` per round; node failures are votes,
// never exceptions.
std::unique_ptr<lock_transport> fan_out_transport(std::vector<connection_pool*> nodes,
                                                  std::chrono::milliseconds node_timeout);

}  // namespace redcoord::detail
