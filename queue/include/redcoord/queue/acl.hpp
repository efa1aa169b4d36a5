#pragma once
/// @file
/// The ACL needs of the queue part (list_queue, reliable_queue, queue_worker), see
/// redcoord/core/acl.hpp.

#include <redcoord/core/acl.hpp>

#include <redcoord/core/export.hpp>
#include <string_view>

REDCOORD_API_BEGIN
namespace redcoord {

/// What an ACL user needs to use list_queue, reliable_queue and queue_worker with key prefix
/// `prefix` (their `prefix` option) on database `db`: the list commands (LPUSH, RPOP, LPOP,
/// BRPOP, BLPOP, LLEN, LMOVE, BLMOVE, LREM, LRANGE), the lease renewal transaction (MULTI,
/// SADD, SET, EXEC), EVAL/EVALSHA and the commands the reliable queue's scripts call, WAIT
/// (`replicas >= 1`) and the pool's commands; keys `<prefix>queue:*` (ready, dead-letter,
/// consumer set, processing and heartbeat keys). No channels.
/// @return the needs; pass them to format_acl_setuser(). Thread-safe.
[[nodiscard]] acl_needs queue_acl_needs(std::string_view prefix = default_prefix, int db = 0);

/// What a read-only ACL user needs to run inspect_queue() (`redcoord inspect`) with key prefix
/// `prefix` on database `db`: only commands that read (and MULTI/EXEC, which make the reads
/// one snapshot), the pool's, and keys `<prefix>queue:*`; no channels.
/// @return the needs; pass them to format_acl_setuser(). Thread-safe.
[[nodiscard]] acl_needs queue_inspect_acl_needs(std::string_view prefix = default_prefix,
                                                int db = 0);

}  // namespace redcoord

REDCOORD_API_END
