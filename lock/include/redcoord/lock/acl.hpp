#pragma once
/// @file
/// The ACL needs of the lock part (distributed_lock, redlock, fair_lock), see
/// redcoord/core/acl.hpp.

#include <redcoord/core/acl.hpp>

#include <redcoord/core/export.hpp>
#include <string_view>

REDCOORD_API_BEGIN
namespace redcoord {

/// What an ACL user needs to use distributed_lock, redlock and fair_lock with key prefix
/// `prefix` (their `prefix` option) on database `db`: EVAL/EVALSHA and the commands their
/// scripts call, WAIT (`replicas >= 1`), the pool's and pub/sub link's commands
/// (connection_acl_needs(), pubsub_acl_needs()); keys `<prefix>lock:*` (the lock, its fence,
/// turn, waiting and fair queue keys) and channels `<prefix>lock:*` (release notices and a
/// fair waiter's wake-up channel). For redlock, create the user on every node.
/// @return the needs; pass them to format_acl_setuser(). Thread-safe.
[[nodiscard]] acl_needs lock_acl_needs(std::string_view prefix = default_prefix, int db = 0);

/// What a read-only ACL user needs to run inspect_lock() (`redcoord inspect`) with key prefix
/// `prefix` on database `db`: only commands that read (and MULTI/EXEC, which make the reads
/// one snapshot), the pool's, and keys `<prefix>lock:*`; no channels.
/// @return the needs; pass them to format_acl_setuser(). Thread-safe.
[[nodiscard]] acl_needs lock_inspect_acl_needs(std::string_view prefix = default_prefix,
                                               int db = 0);

}  // namespace redcoord

REDCOORD_API_END
