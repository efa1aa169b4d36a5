#pragma once
/// @file
/// What one node did with a fanned-out command (redcoord/core/fan_out.hpp), apart from the
/// fan-out itself: the sans-I/O engines read it without pulling in connections and pools.

#include <redcoord/core/export.hpp>
#include <redcoord/core/reply.hpp>

#include <chrono>
#include <optional>
#include <string>

REDCOORD_API_BEGIN
namespace redcoord {

/// What one node did with a fanned-out command.
struct node_result {
    /// How the node's part ended.
    enum class status {
        pending,            ///< Not answered when the fan-out stopped early (quorum reached).
        answered,           ///< A reply arrived (it may be an error reply: see `value`).
        timeout,            ///< No reply within the deadline (hung or paused node).
        connection_failed,  ///< Could not connect, or the link broke.
        /// Nothing was sent: every connection of the node's pool stayed leased (to other
        /// threads) for the whole wait (the first three quarters of the round's deadline,
        /// capped by the pool's `borrow_timeout`). Says nothing about the node's health: size
        /// the pool for the concurrency, or retry.
        pool_exhausted,
        /// Nothing was sent: the node had no connection yet and the connect (with handshake)
        /// was still under way when the deadline came. Not a failure of the node: the connect
        /// goes on in the background, within the endpoint's `connect_timeout` however short
        /// the deadline, and its connection serves the next fan-out.
        connecting,
        /// Nothing was sent: `stop_when` decided the round before this node needed a
        /// connection (no idle one was at hand), and the round neither reaches every node nor
        /// is detached. Nothing of the command runs there (unlike `pending`, whose command was
        /// sent and may still run).
        not_sent,
    };
    status state = status::pending;        ///< What became of the command on this node.
    std::optional<reply> value;            ///< The reply, when answered.
    std::string error;                     ///< Why it failed (no password), otherwise empty.
    std::chrono::microseconds latency{0};  ///< From the start of the fan-out to this outcome.

    /// True when the node replied in time (state == status::answered; the reply may be an error).
    [[nodiscard]] bool answered() const noexcept { return state == status::answered; }
};

}  // namespace redcoord
REDCOORD_API_END
