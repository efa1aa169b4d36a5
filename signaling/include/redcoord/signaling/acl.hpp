#pragma once
/// @file
/// The ACL needs of the signaling part (signal_hub, barrier, double_barrier, latch), see
/// redcoord/core/acl.hpp.

#include <redcoord/core/acl.hpp>

#include <redcoord/core/export.hpp>
#include <string>
#include <string_view>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord {

/// What an ACL user needs to use signal_hub, barrier, double_barrier and latch with key
/// prefix `prefix` (signal_options::prefix) on database `db`: EVAL/EVALSHA and the commands
/// their scripts call (PUBSUB CHANNELS for unicast), PUBLISH (broadcast), SET and GET
/// (latch), the pool's and pub/sub link's commands including PSUBSCRIBE/PUNSUBSCRIBE
/// (pattern waits and slots); keys `<prefix>barrier:*`, `<prefix>double_barrier:*`,
/// `<prefix>latch:*` and `<prefix>unicast:*` (on a cluster, unicast's script names the
/// channel's unicast prefix as its routing key); channels `<prefix>unicast:*` and the three
/// others (barriers and latches wake their waiters on a channel named as their key). On a
/// cluster pass the result through cluster_acl_needs().
///
/// Broadcast channels are used verbatim (plain clients may publish to them), so they are the
/// caller's to name: `channels` holds their glob patterns (for example `orders*`); a pattern wait
/// needs a channel pattern that matches the PSUBSCRIBE pattern literally (`orders*` allows
/// PSUBSCRIBE `orders*`).
/// @return the needs; pass them to format_acl_setuser(). Thread-safe.
[[nodiscard]] acl_needs signaling_acl_needs(std::string_view prefix = default_prefix,
                                            const std::vector<std::string>& channels = {},
                                            int db = 0);

/// What a read-only ACL user needs to run inspect_barrier() (`redcoord inspect`) with key prefix
/// `prefix` on database `db`: only commands that read (and MULTI/EXEC, which make the reads
/// one snapshot), the pool's, and keys `<prefix>barrier:*`; no channels.
/// @return the needs; pass them to format_acl_setuser(). Thread-safe.
[[nodiscard]] acl_needs signaling_inspect_acl_needs(std::string_view prefix = default_prefix,
                                                    int db = 0);

}  // namespace redcoord

REDCOORD_API_END
