#pragma once
/// @file
/// A read-only view of a barrier's state, for operators (`redcoord inspect barrier`) and
/// health checks. It arrives at nothing and changes nothing.

#include <redcoord/core/export.hpp>
#include <redcoord/core/keys.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord {

class connection_pool;

/// One member counted in a barrier's current generation.
struct barrier_arrival {
    std::string member;  ///< The member id.
    /// Time left on its arrival lease, in milliseconds (server time); a member whose lease ran
    /// out is shown with zero until the next script run drops it.
    std::chrono::milliseconds lease_left{0};
};

/// The state of one barrier on its server, read in one MULTI/EXEC (one instant).
struct barrier_inspection {
    /// The current generation: how many times the barrier has opened (0 for a new barrier).
    std::uint64_t generation = 0;
    /// The stored party count; nullopt when no member has arrived since the state expired.
    std::optional<std::size_t> parties;
    /// Members whose arrival in the current generation still counts (live lease), by member id.
    std::vector<barrier_arrival> arrivals;
    /// Members whose lease has lapsed but are still listed (they will not be counted).
    std::vector<barrier_arrival> lapsed;
};

/// Reads the state of barrier `name` on the server behind `pool`.
///
/// Cost: one round trip (MULTI, HMGET, ZRANGE WITHSCORES, TIME, EXEC). It needs read access
/// to the barrier's keys, TIME and MULTI/EXEC (an operator's user).
/// @param pool a pool on the barrier's server (the signal hub's master).
/// @param name the barrier's name, as given to barrier.
/// @param prefix the key prefix of the barrier's signal hub (signal_options::prefix).
/// @throws invalid_argument for a bad barrier name;
/// @throws permission_error when the server's ACL refuses a read;
/// @throws reply_error when the server refuses otherwise;
/// @throws protocol_error when a stored number is not a number;
/// @throws connection_error, timeout_error, pool_exhausted on transport failures.
/// Thread-safety: any thread.
[[nodiscard]] barrier_inspection inspect_barrier(connection_pool& pool, std::string_view name,
                                                 std::string_view prefix = default_prefix);

}  // namespace redcoord
REDCOORD_API_END
