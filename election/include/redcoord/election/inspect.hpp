#pragma once
/// @file
/// A read-only view of an election's state, for operators (`redcoord inspect election`) and
/// health checks. It campaigns for nothing and changes nothing.

#include <redcoord/core/export.hpp>
#include <redcoord/core/keys.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord {

class connection_pool;

/// One candidate of an election: an identity that ran a campaign round within its last term.
struct election_candidate {
    /// The candidate's identity (election_options::identity; by default `host:pid:random`).
    std::string identity;
    /// Time until the candidate drops out of the list unless it campaigns again, in
    /// milliseconds: what is left of the term of its last round, on the server's clock.
    std::chrono::milliseconds expires_in{0};
};

/// The state of one election on its server, read in one MULTI/EXEC (one instant).
struct election_inspection {
    /// The leader's identity (master_selector's candidate identity); nullopt when no one holds
    /// the selector (no leader, or its term ran out).
    std::optional<std::string> leader;
    /// The leader's epoch (its fencing token); 0 when there is no leader.
    std::uint64_t epoch = 0;
    /// Time left in the leader's term on the server, in milliseconds (the selector's PTTL). The
    /// leader itself stops acting as leader earlier, by the clock drift allowance.
    std::optional<std::chrono::milliseconds> term_left;
    /// Campaign rounds run against the selector during the current term (every candidate's
    /// round counts); 0 when there is no leader.
    std::uint64_t rounds = 0;
    /// The highest epoch handed out so far (the counter); nullopt when it expired or was never
    /// created. The next leader's epoch is above it.
    std::optional<std::uint64_t> last_epoch;
    /// Every candidate whose last round's term has not ended, the leader among them, soonest
    /// to drop out first (ties in identity order). A leader that resigns or stops leaves the
    /// list at once; any other candidate that stops campaigning (stopped, crashed, cut off)
    /// drops out when the term of its last round ends.
    std::vector<election_candidate> candidates;
};

/// Reads the state of election `name` on the server behind `pool`.
///
/// Cost: one round trip (MULTI, HMGET, PTTL, GET, TIME, ZRANGE, EXEC); O(C) in the number of
/// candidates. It needs read access to the
/// election's keys and MULTI/EXEC (an operator's user: election_acl_needs() grants scripts).
/// @param pool a pool on the election's server.
/// @param name the election's name, as given to master_selector or leader_elector.
/// @param prefix the key prefix the election was built with (election_options::prefix).
/// @throws invalid_argument for a bad election name (as master_selector's constructor);
/// @throws permission_error when the server's ACL refuses a read;
/// @throws reply_error when the server refuses otherwise;
/// @throws protocol_error when a stored number is not a number;
/// @throws connection_error, timeout_error, pool_exhausted on transport failures.
/// Thread-safety: any thread.
[[nodiscard]] election_inspection inspect_election(connection_pool& pool, std::string_view name,
                                                   std::string_view prefix = default_prefix);

}  // namespace redcoord
REDCOORD_API_END
