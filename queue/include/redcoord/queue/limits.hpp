#pragma once
/// @file
/// Payload size limits shared by list_queue and reliable_queue.
///
/// Redis refuses a bulk argument longer than its `proto-max-bulk-len` (512 MiB by default) with
/// `-ERR Protocol error` and then closes the connection. The queues check sizes on the client
/// before anything is sent instead, so an oversized payload is a typed error that leaves the
/// connection (and everything pooled behind it) untouched: push() and push_batch() throw
/// payload_too_large (core/errors.hpp, included here) for a payload longer than the queue's
/// `max_payload`, before any byte is sent (for a batch: before any message of it is sent).

#include <redcoord/core/errors.hpp>
#include <redcoord/core/export.hpp>

#include <cstddef>

REDCOORD_API_BEGIN
namespace redcoord {

/// The largest payload size a queue can be configured to accept, in bytes: Redis's default
/// `proto-max-bulk-len` (512 MiB) minus room for reliable_queue's envelope header.
inline constexpr std::size_t max_payload_limit = 512u * 1024u * 1024u - 64u;

/// The default `max_payload` of list_queue_options and reliable_queue_options (bytes):
/// max_payload_limit. Lower it to match a server whose proto-max-bulk-len is lower.
inline constexpr std::size_t default_max_payload = max_payload_limit;

}  // namespace redcoord

REDCOORD_API_END
