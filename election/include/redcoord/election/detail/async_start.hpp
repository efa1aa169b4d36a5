#pragma once
/// @file
/// The non-template half of redcoord/election/async.hpp: what its initiation calls. Internal
/// to redcoord; not a stable API.

#include <redcoord/core/detail/async_operation.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/election/leader_elector.hpp>

#include <chrono>
#include <memory>

REDCOORD_API_BEGIN
namespace redcoord {

class runtime;

namespace detail {

/// Starts the asynchronous wait behind async_wait_until_leader(); `done` runs exactly once,
/// never before this returns.
/// @throws invalid_argument when `timeout` is negative.
std::shared_ptr<async_operation> start_async_wait_until_leader(
    leader_elector& elector, std::chrono::milliseconds timeout,
    async_completion<leader_elector::leadership> done);
/// The runtime of `elector` (its pool's).
runtime& runtime_of(leader_elector& elector);

}  // namespace detail
}  // namespace redcoord

REDCOORD_API_END
