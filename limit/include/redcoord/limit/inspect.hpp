#pragma once
/// @file
/// Read-only views of the limiters' state, for operators (`redcoord inspect semaphore|rwlock|
/// limit`, the dashboard) and health checks. They take nothing and change nothing; each is one MULTI/EXEC
/// (one instant), with lease times measured on the server's clock (TIME in the same snapshot).

#include <redcoord/core/export.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/limit/rate_limiter.hpp>
#include <redcoord/limit/sliding_window_limiter.hpp>

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

/// One live holding: whose (a fingerprint), how many units and how long its lease has left.
struct lease_view {
    /// The first 16 hexadecimal digits of the SHA-1 of the holding's token (as
    /// lock_holder_fingerprint()). The token itself is never shown: whoever has it can release
    /// or extend the holding.
    std::string holder;
    /// The holder's label (semaphore_options::label, rw_lock_options::label; by default
    /// `<host>:<pid>`); empty when it has none. Informative only.
    std::string label;
    /// Permits this holding has (1 for an rw_lock hold).
    std::uint64_t count = 1;
    /// Time until its lease ends, in milliseconds (the earliest of its leases).
    std::chrono::milliseconds ttl_left{0};
};

/// The state of a semaphore (see semaphore).
struct semaphore_inspection {
    /// Live holdings, soonest-ending first (leases that ended are left out).
    std::vector<lease_view> holders;
    /// Live permits held in all (the sum of the holders' counts).
    std::uint64_t held = 0;
    /// Waiters queued (refused callers that wait and whose entry has not lapsed).
    std::size_t waiters = 0;
    /// The last fencing token issued; nullopt when the counter expired or never existed.
    std::optional<std::uint64_t> fencing_counter;
    /// N as the latest acquisition counted it (semaphore_options::permits; each acquisition
    /// stores its N, which lives as long as the holdings); nullopt when nothing is held.
    std::optional<std::uint64_t> permits;
};

/// The state of an rw_lock (see rw_lock).
struct rw_lock_inspection {
    /// The writer, if one holds.
    std::optional<lease_view> writer;
    /// Live readers, soonest-ending first.
    std::vector<lease_view> readers;
    /// Writers waiting with a live intent (they refuse new readers).
    std::size_t waiting_writers = 0;
    /// Readers waiting.
    std::size_t waiting_readers = 0;
    /// The last fencing token issued; nullopt when the counter expired or never existed.
    std::optional<std::uint64_t> fencing_counter;
};

/// The state of a rate_limiter (see rate_limiter), judged with the given options.
struct rate_limiter_inspection {
    /// No state in Redis: the limiter is full (its key lapses when it is).
    bool idle = true;
    /// Units a request could take now (burst when idle).
    std::uint64_t remaining = 0;
    /// Time until the limiter is full again, in microseconds (0 when idle).
    std::chrono::microseconds full_after{0};
    /// The burst the judgement used: the given options', or the one the latest admission
    /// stored with the state (beside the emission interval, period / rate); nullopt when
    /// neither is known (an idle limiter read by name alone: `remaining` is then 0, meaning
    /// unknown).
    std::optional<std::uint64_t> burst;
    /// The emission interval the judgement used, in microseconds; known when `burst` is.
    std::optional<double> interval_us;
};

/// The state of a sliding_window_limiter (see sliding_window_limiter).
struct sliding_window_inspection {
    /// No unit in the window (its keys lapse a window after the last admission).
    bool idle = true;
    /// Cost units admitted within the last window.
    std::uint64_t used = 0;
    /// Units a request could take now (limit - used; 0 when the limit is unknown).
    std::uint64_t remaining = 0;
    /// Time until every unit now in the window has left it, in microseconds (0 when idle).
    std::chrono::microseconds reset_after{0};
    /// The limit the judgement used: the given options', or the one the latest admission
    /// stored beside the log; nullopt when neither is known (an idle limiter read by name
    /// alone).
    std::optional<std::uint64_t> limit;
    /// The window the judgement used, in microseconds; known when `limit` is.
    std::optional<std::chrono::microseconds> window;
};

/// Reads semaphore `name`'s state (keys under `prefix`, semaphore_options::prefix).
/// @throws invalid_argument for a bad name (as the semaphore's constructor);
/// @throws permission_error when the ACL refuses a read (limit_acl_needs() grants scripts
///         only: an operator's user needs read access and MULTI/EXEC);
/// @throws connection_error, timeout_error, protocol_error, pool_exhausted on transport failures.
/// Thread-safety: any thread.
[[nodiscard]] semaphore_inspection inspect_semaphore(connection_pool& pool, std::string_view name,
                                                     std::string_view prefix = default_prefix);

/// Reads rw_lock `name`'s state (keys under `prefix`, rw_lock_options::prefix). Errors and
/// thread-safety as inspect_semaphore().
[[nodiscard]] rw_lock_inspection inspect_rw_lock(connection_pool& pool, std::string_view name,
                                                 std::string_view prefix = default_prefix);

/// Reads rate limiter `name`'s state and judges it with `opts` (its rate, burst and prefix:
/// the state holds no options). Errors as inspect_semaphore(), and invalid_argument for bad
/// options.
[[nodiscard]] rate_limiter_inspection inspect_rate_limiter(connection_pool& pool,
                                                           std::string_view name,
                                                           const rate_limiter_options& opts);

/// The same, judged with the interval and burst the latest admission stored with its state
/// (nothing to pass: for the dashboard and `redcoord inspect limit NAME` without --rate).
/// Errors as inspect_semaphore().
[[nodiscard]] rate_limiter_inspection inspect_rate_limiter(
    connection_pool& pool, std::string_view name, std::string_view prefix = default_prefix);

/// Reads sliding window limiter `name`'s log and judges it with `opts` (limit, window,
/// prefix). Reads every unit in the log (at most the limit), so it costs O(limit). Errors as
/// inspect_semaphore(), and invalid_argument for bad options.
[[nodiscard]] sliding_window_inspection inspect_sliding_window(connection_pool& pool,
                                                               std::string_view name,
                                                               const sliding_window_options& opts);

/// The same, judged with the limit and window the latest admission stored beside the log.
[[nodiscard]] sliding_window_inspection inspect_sliding_window(
    connection_pool& pool, std::string_view name, std::string_view prefix = default_prefix);

}  // namespace redcoord
REDCOORD_API_END
