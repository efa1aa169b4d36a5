#pragma once
/// @file
/// The ACL needs of the limit part (rate_limiter, sliding_window_limiter, semaphore), see
/// redcoord/core/acl.hpp.

#include <redcoord/core/acl.hpp>
#include <redcoord/core/export.hpp>

#include <string_view>

REDCOORD_API_BEGIN
namespace redcoord {

/// What an ACL user needs to use rate_limiter, sliding_window_limiter and semaphore with key
/// prefix `prefix` (their `prefix` option) on database `db`: EVAL/EVALSHA and the commands
/// their scripts call, the pool's and pub/sub link's commands (connection_acl_needs(),
/// pubsub_acl_needs(): a semaphore's waiters listen for releases); keys `<prefix>rate:*`,
/// `<prefix>window:*` and `<prefix>semaphore:*`, and channels `<prefix>semaphore:*`.
/// @return the needs; pass them to format_acl_setuser(). Thread-safe.
[[nodiscard]] acl_needs limit_acl_needs(std::string_view prefix = default_prefix, int db = 0);

}  // namespace redcoord

REDCOORD_API_END
