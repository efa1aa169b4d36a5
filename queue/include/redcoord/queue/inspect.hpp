#pragma once
/// @file
/// A read-only view of a reliable queue's state, for operators (`redcoord inspect queue`) and
/// health checks. It registers no consumer and moves no message.

#include <redcoord/core/export.hpp>
#include <redcoord/core/keys.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord {

class connection_pool;

/// One registered consumer of a reliable queue.
struct queue_consumer_inspection {
    std::string id;             ///< The consumer id (reliable_queue_options::consumer_id).
    std::size_t in_flight = 0;  ///< Messages in its processing list.
    /// Time left on its lease (heartbeat key), in milliseconds; nullopt when expired: the next
    /// recover() of any consumer returns its in-flight messages to the queue.
    std::optional<std::chrono::milliseconds> lease_left;
    /// Age of its oldest in-flight message since that message was pushed (see
    /// queue_inspection::oldest_ready_age for the clock); nullopt when none is in flight or
    /// that element is not an envelope (pushed raw by another client).
    std::optional<std::chrono::milliseconds> oldest_in_flight_age;
};

/// The state of one reliable queue on its server.
struct queue_inspection {
    std::size_t ready = 0;  ///< Messages waiting to be popped.
    std::size_t dead = 0;   ///< Messages in the dead-letter list.
    /// Age of the oldest waiting message (the next one a consumer gets), in milliseconds:
    /// the server's TIME minus the push time written by the producer (its wall clock, so a
    /// producer whose clock is off shifts it). nullopt when the queue is empty or the oldest
    /// element was pushed raw.
    std::optional<std::chrono::milliseconds> oldest_ready_age;
    /// Every registered consumer, in id order.
    std::vector<queue_consumer_inspection> consumers;
    /// Sum of in_flight over the consumers.
    [[nodiscard]] std::size_t in_flight() const noexcept;
    /// Number of consumers whose lease has expired (not yet recovered).
    [[nodiscard]] std::size_t expired() const noexcept;
};

/// Reads the state of reliable queue `name` on the server behind `pool`.
///
/// Cost: two round trips, each one MULTI/EXEC: the queue's lists, consumer set and the server
/// time, then each consumer's processing list length, lease TTL and oldest element. A
/// consumer that registers or leaves between the two is shown as found by the second.
/// It needs read access to the queue's keys, TIME and MULTI/EXEC (an operator's user).
/// @param pool a pool on the queue's server.
/// @param name the queue's name, as given to reliable_queue.
/// @param prefix the key prefix of the queue (reliable_queue_options::prefix).
/// @throws invalid_argument for a bad queue name (as reliable_queue's constructor);
/// @throws permission_error when the server's ACL refuses a read;
/// @throws reply_error when the server refuses otherwise;
/// @throws connection_error, timeout_error, protocol_error, pool_exhausted on transport failures.
/// Thread-safety: any thread.
[[nodiscard]] queue_inspection inspect_queue(connection_pool& pool, std::string_view name,
                                             std::string_view prefix = default_prefix);

}  // namespace redcoord
REDCOORD_API_END
