#pragma once
/// @file
/// Read-only views of a lock's state on one server, for operators (`redcoord inspect lock`)
/// and health checks. They take nothing and change nothing.

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

/// The state of one lock resource on one server, read in one MULTI/EXEC (one instant).
///
/// The same keys serve distributed_lock, fair_lock and each node of a redlock, so one view
/// fits all three; fields a kind does not use are empty.
struct lock_inspection {
    /// Whether the lock key exists (someone holds the resource on this server).
    bool held = false;
    /// Fingerprint of the holder's token (lock_holder_fingerprint()); empty when free. The
    /// token itself is never shown: whoever has it can release or extend the lock.
    std::string holder;
    /// The holder's label (lock_options::label and the like; by default `<host>:<pid>`);
    /// empty when free or when the holding carries none (a holder of another client).
    /// Informative only: it is read from the token, never trusted for ownership.
    std::string label;
    /// Time until the holding expires on this server, in milliseconds (PTTL); nullopt when
    /// free (or, never by redcoord, a key without TTL).
    std::optional<std::chrono::milliseconds> ttl_left;
    /// A waiter asked to be told when the holder releases (`<lock key>:notice` names the
    /// holder's token), so the release will publish a wake-up.
    bool release_notice = false;
    /// The last fencing token issued for this resource (see distributed_lock::fencing_token());
    /// nullopt when the counter has expired or was never created.
    std::optional<std::uint64_t> fencing_counter;
    /// Bounded unfairness (distributed_lock::max_unfairness): the identity whose turn runs,
    /// and how long the turn has left in milliseconds; nullopt when no turn is running.
    std::optional<std::string> turn_owner;
    std::optional<std::chrono::milliseconds> turn_left;  ///< See turn_owner.
    /// Bounded unfairness: the waiter that asked for the next turn; nullopt when none.
    std::optional<std::string> next_in_turn;
    /// fair_lock's FIFO of waiting client ids, head (next to acquire) first. Entries of waiters
    /// that died stay until a live waiter's script drops them.
    std::vector<std::string> fair_queue;
};

/// The fingerprint shown for a holder: the first 16 hexadecimal digits of the SHA-1 of its
/// token. Log it beside your own lock's token to tell holders apart without revealing tokens.
[[nodiscard]] std::string lock_holder_fingerprint(std::string_view token);

/// Reads the state of lock `resource` on the server behind `pool` (for a Redlock, call it on
/// each master's pool; each server's view is independent).
///
/// Cost: one round trip (MULTI, GET, PTTL, GET, GET, PTTL, GET, LRANGE, EXEC). It needs read
/// access to the lock's keys and the MULTI/EXEC commands (an operator's user: lock_acl_needs()
/// grants scripts only).
/// @param pool a pool on the server to read (one Redlock master).
/// @param resource the lock's resource name, as given to the lock objects.
/// @param prefix the key prefix the lock objects were built with (lock_options::prefix).
/// @throws invalid_argument for a bad resource name (as the lock's constructor);
/// @throws permission_error when the server's ACL refuses a read;
/// @throws reply_error when the server refuses otherwise;
/// @throws connection_error, timeout_error, protocol_error, pool_exhausted on transport failures.
/// Thread-safety: any thread; the pool is thread-safe.
[[nodiscard]] lock_inspection inspect_lock(connection_pool& pool, std::string_view resource,
                                           std::string_view prefix = default_prefix);

}  // namespace redcoord
REDCOORD_API_END
