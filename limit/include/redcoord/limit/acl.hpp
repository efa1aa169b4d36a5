#pragma once
/// @file
/// The ACL needs of the limit part (rate_limiter, sliding_window_limiter, semaphore, rw_lock),
/// see redcoord/core/acl.hpp.

#include <redcoord/core/acl.hpp>
#include <redcoord/core/export.hpp>

#include <string_view>

REDCOORD_API_BEGIN
namespace redcoord {

/// What an ACL user needs to use rate_limiter, sliding_window_limiter and semaphore with key
/// prefix `prefix` (their `prefix` option) on database `db`: EVAL/EVALSHA and the commands
/// their scripts call, the pool's and pub/sub link's commands (connection_acl_needs(),
/// pubsub_acl_needs(): a semaphore's waiters listen for releases); keys `<prefix>rate:*`,
/// `<prefix>window:*` and `<prefix>semaphore:*`, and channels `<prefix>semaphore:*`; and
/// rw_lock_acl_needs() (what `redcoord acl-rules --part limit` prints).
/// @return the needs; pass them to format_acl_setuser(). Thread-safe.
[[nodiscard]] acl_needs limit_acl_needs(std::string_view prefix = default_prefix, int db = 0);

/// What an ACL user needs to use rw_lock alone with key prefix `prefix` (rw_lock_options::
/// prefix) on database `db`: EVAL/EVALSHA and the commands its scripts call, the pool's and
/// pub/sub link's commands (waiters listen for releases), keys `<prefix>rwlock:*` and channels
/// `<prefix>rwlock:*`.
/// @return the needs; pass them to format_acl_setuser(). Thread-safe.
[[nodiscard]] acl_needs rw_lock_acl_needs(std::string_view prefix = default_prefix, int db = 0);

/// What a read-only ACL user needs to run inspect_semaphore(), inspect_rw_lock(),
/// inspect_rate_limiter() and inspect_sliding_window() (`redcoord inspect
/// semaphore|rwlock|limit`) with key prefix `prefix` on database `db`: only commands that read
/// (and MULTI/EXEC, which make the reads one snapshot), the pool's, and keys `<prefix>rate:*`,
/// `<prefix>window:*`, `<prefix>semaphore:*`, `<prefix>rwlock:*`.
/// @return the needs; pass them to format_acl_setuser(). Thread-safe.
[[nodiscard]] acl_needs limit_inspect_acl_needs(std::string_view prefix = default_prefix,
                                                int db = 0);

}  // namespace redcoord

REDCOORD_API_END
