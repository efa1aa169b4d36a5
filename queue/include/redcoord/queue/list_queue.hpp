#pragma once
/// @file
/// A plain Redis list used as a FIFO or LIFO queue (docs/queue.md; https://redis.io/commands/lpush/: LPUSH with RPOP/BRPOP
/// or LPOP/BLPOP). No acknowledgement: a message popped by a client that then dies is gone;
/// use reliable_queue when that matters.

#include <redcoord/core/export.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/queue/limits.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord {

/// Which end a list_queue pops from.
enum class queue_order {
    fifo,  ///< LPUSH + RPOP/BRPOP: first in, first out.
    lifo,  ///< LPUSH + LPOP/BLPOP: last in, first out (a stack).
};

/// Options of a list_queue.
struct list_queue_options {
    queue_order order = queue_order::fifo;  ///< Pop end.
    std::string prefix{default_prefix};     ///< Key prefix (core/keys.hpp).
    /// Longest payload push() and push_batch() accept, in bytes (limits.hpp); longer ones
    /// throw payload_too_large before anything is sent. Must be in 1..max_payload_limit.
    std::size_t max_payload = default_max_payload;
};

/// A FIFO or LIFO queue on one Redis list, key `<prefix>queue:{<name>}` (the same list a
/// reliable_queue of that name consumes, so a list_queue can feed one with raw payloads).
///
/// Payloads are binary-safe (NUL, CR, LF, any size Redis accepts).
///
/// @par Thread safety
/// Every member function may be called from any thread concurrently (each
/// call borrows its own pooled connection). The pool must outlive the queue.
///
/// @par Errors
/// The constructor throws invalid_argument; push() and push_batch() throw payload_too_large before
/// sending; every call throws connection_error, timeout_error, pool_exhausted or reply_error from
/// the pool; a pop that finds nothing returns nullopt.
///
/// @par Cost
/// push(): one LPUSH; push_batch(): one LPUSH for all; try_pop(): one RPOP (LIFO: LPOP);
/// pop(timeout): one BRPOP (LIFO: BLPOP) that holds a pooled connection for up to its timeout;
/// size(): one LLEN. Each is one round trip.
class list_queue {
public:
    /// Makes a handle; nothing is sent until the first call.
    /// @throws invalid_argument for an empty name, one over max_name_length, or holding
    ///         CR/LF/NUL.
    list_queue(connection_pool& pool, std::string_view name, list_queue_options opts = {});

    /// Appends one message (LPUSH).
    /// @throws payload_too_large (limits.hpp) when longer than options' max_payload, before
    ///         anything is sent; connection/timeout/reply errors from core. A server that
    ///         refuses the argument as a protocol error closes the link; that connection is
    ///         discarded, never handed to the next borrower.
    void push(std::string_view payload);
    /// Appends all messages in one command (one round trip); they are popped in the order
    /// given (FIFO) or reversed (LIFO). An empty span does nothing. Errors as push(); one
    /// oversized payload refuses the whole batch before anything is sent.
    void push_batch(std::span<const std::string> payloads);
    /// Same, for a vector.
    void push_batch(const std::vector<std::string>& payloads) {
        push_batch(std::span<const std::string>(payloads));
    }

    /// Pops one message, blocking up to `timeout` (ms resolution) for one to arrive; zero
    /// or negative means do not block (like try_pop()), `milliseconds::max()` waits until a
    /// message comes (deadlines saturate, core/deadline.hpp). Returns nullopt when none came
    /// in time. A waiting message is taken with RPOP/LPOP; an empty list is waited on with
    /// BRPOP/BLPOP in blocks of at most max_block, each with a reply deadline of the block
    /// plus the endpoint's command_timeout. Errors as push().
    [[nodiscard]] std::optional<std::string> pop(std::chrono::milliseconds timeout);
    /// Pops one message if one is there now (RPOP/LPOP). Errors as push().
    [[nodiscard]] std::optional<std::string> try_pop();
    /// Number of messages waiting (LLEN). Errors as push().
    [[nodiscard]] std::size_t size();

    /// The Redis key of the list.
    [[nodiscard]] const std::string& key() const noexcept { return key_; }
    /// The pop end chosen at construction.
    [[nodiscard]] queue_order order() const noexcept { return order_; }
    /// Longest single BRPOP/BLPOP a pop() sends; longer waits repeat it.
    static constexpr std::chrono::milliseconds max_block{60000};

private:
    connection_pool& pool_;
    std::string key_;
    queue_order order_;
    std::size_t max_payload_;
};

}  // namespace redcoord

REDCOORD_API_END
