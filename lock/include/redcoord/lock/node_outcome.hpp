#pragma once
/// @file
/// What one node did in a Redlock's last round (redlock::last_outcomes()), apart from the lock
/// classes: the sans-I/O lock engine reports it without pulling in connections and pools.

#include <redcoord/core/export.hpp>

#include <chrono>
#include <cstdint>
#include <string>

REDCOORD_API_BEGIN
namespace redcoord {

/// What one node did in the last round (acquire, extend or release), for diagnosis.
struct node_outcome {
    /// How the node answered.
    enum class status {
        yes,          ///< Granted (acquired / extended / deleted our key).
        no,           ///< Refused (held by another / not our key any more).
        error,        ///< Answered with an error reply (for example OOM, wrong type).
        timeout,      ///< No answer within node_timeout (hung or paused node).
        unreachable,  ///< Could not connect, or the link broke.
        not_waited,   ///< Still in flight when the round was decided by a majority.
        busy,         ///< This process's pool for the node had no free connection within the
                      ///< round (pool_options::max_size reached), or the round was decided
                      ///< before the node needed one: nothing was sent, and it says nothing
                      ///< about the node. Not counted as a failure: the round is retried like
                      ///< a split vote, and a held lock is not declared lost.
        connecting,   ///< Not yet answered: the node had no connection and the connect (with
                      ///< handshake) was still under way at the round's end. Nothing was sent.
                      ///< Counted as slow, never as down: the connect goes on in the
                      ///< background within the endpoint's connect_timeout, and the next round
                      ///< uses it.
    };
    status state = status::not_waited;  ///< What the node did (see status).
    /// The holder's PTTL reported by a refusing node, in milliseconds (-1: no expiry,
    /// -2: none), else -2.
    std::int64_t pttl = -2;
    /// The node's fencing counter after a granting acquire, else 0.
    std::uint64_t fence = 0;
    /// Time from the round's start to this node's outcome.
    std::chrono::microseconds latency{0};
    /// For a refusing acquire: the first 16 hex digits of SHA1 of the holder's token (equal
    /// ids on a majority mean one client holds the lock; the token itself is not revealed).
    std::string holder;
    /// For a refusing acquire: what is left of the holder's turn, in milliseconds (how long
    /// it may still re-acquire while others wait; see distributed_lock's "Fairness"), else 0.
    std::int64_t turn_left = 0;
    /// For a refusing acquire: the lock was free, but this object's turn is over and another
    /// waits for it, so it yields.
    bool yielding = false;
    /// Error text for error/timeout/unreachable (never a password).
    std::string detail;
};

}  // namespace redcoord
REDCOORD_API_END
