#pragma once
/// @file
/// The ACL needs of the jobs part (job_queue, job_worker, job_events, job_scheduler,
/// inspect_jobs()), see redcoord/core/acl.hpp.

#include <redcoord/core/acl.hpp>
#include <redcoord/core/export.hpp>

#include <string_view>

REDCOORD_API_BEGIN
namespace redcoord {

/// What an ACL user needs to use job queues with key prefix `prefix` (job_queue_options::
/// prefix) on database `db`: EVAL/EVALSHA and the commands the jobs' scripts call, ZRANGE
/// (list()), ZCARD (counts()), WAIT (`replicas >= 1`), PUBLISH (stalled events), the pub/sub
/// link's commands (wake-ups, cancellations, events) and the pool's; keys and channels
/// `<prefix>jobs:*`; and, for job_scheduler, election_acl_needs() (its election is named
/// after the queue).
/// @return the needs; pass them to format_acl_setuser(). Thread-safe.
[[nodiscard]] acl_needs jobs_acl_needs(std::string_view prefix = default_prefix, int db = 0);

/// What a read-only ACL user needs to run inspect_jobs() (`redcoord inspect`) with key prefix
/// `prefix` on database `db`: only commands that read (and MULTI/EXEC, which make the reads
/// one snapshot, and EVAL/EVALSHA of its read-only script), the pool's, and keys `<prefix>jobs:*` and `<prefix>election:*`; no channels.
/// @return the needs; pass them to format_acl_setuser(). Thread-safe.
[[nodiscard]] acl_needs jobs_inspect_acl_needs(std::string_view prefix = default_prefix,
                                               int db = 0);

}  // namespace redcoord

REDCOORD_API_END
