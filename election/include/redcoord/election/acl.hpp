#pragma once
/// @file
/// The ACL needs of the election part (master_selector, leader_elector, leader_task), see
/// redcoord/core/acl.hpp.

#include <redcoord/core/acl.hpp>

#include <redcoord/core/export.hpp>
#include <string_view>

REDCOORD_API_BEGIN
namespace redcoord {

/// What an ACL user needs to run master_selector, leader_elector and leader_task with key
/// prefix `prefix` (election_options::prefix) on database `db`: EVAL/EVALSHA and the
/// commands the campaign and resign scripts call, HGET (leader()), HMGET and PTTL (`redcoord leader`, `observe`), WAIT (`replicas >= 1`),
/// the pool's and pub/sub link's commands; keys `<prefix>election:*` (selector hash, epoch
/// counter) and channels `<prefix>election:*` (the handoff channel).
/// @return the needs; pass them to format_acl_setuser(). Thread-safe.
[[nodiscard]] acl_needs election_acl_needs(std::string_view prefix = default_prefix, int db = 0);

/// What a read-only ACL user needs to run inspect_election() (`redcoord inspect`) with key prefix
/// `prefix` on database `db`: only commands that read (and MULTI/EXEC, which make the reads
/// one snapshot), the pool's, and keys `<prefix>election:*`; no channels.
/// @return the needs; pass them to format_acl_setuser(). Thread-safe.
[[nodiscard]] acl_needs election_inspect_acl_needs(std::string_view prefix = default_prefix,
                                                   int db = 0);

}  // namespace redcoord

REDCOORD_API_END
