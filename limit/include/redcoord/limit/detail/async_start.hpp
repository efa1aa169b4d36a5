#pragma once
/// @file
/// The non-template half of redcoord/limit/async.hpp: what its initiations call. Internal to
/// redcoord; not a stable API.

#include <redcoord/core/detail/async_operation.hpp>
#include <redcoord/core/export.hpp>

#include <chrono>
#include <cstdint>
#include <memory>

REDCOORD_API_BEGIN
namespace redcoord {

class permit;
class runtime;
class rw_lock;
class semaphore;

namespace detail {

/// Starts the asynchronous acquire behind async_acquire(semaphore&, ...); `done` runs exactly
/// once, never before this returns.
/// @throws invalid_argument as async_acquire() documents.
std::shared_ptr<async_operation> start_async_acquire(semaphore& sem, std::uint64_t n,
                                                     std::chrono::milliseconds wait,
                                                     async_completion<permit> done);
/// The runtime of `sem` (its pool's).
runtime& runtime_of(semaphore& sem);

/// Starts the asynchronous release behind async_release(permit&, ...); `done` runs exactly
/// once, never before this returns, with true (all its permits were still held), false (some
/// had lapsed) or nullopt (released before: nothing sent).
/// @throws invalid_argument as async_release() documents.
std::shared_ptr<async_operation> start_async_release(permit& p, async_completion<bool> done);
/// The runtime of `p`'s semaphore.
/// @throws invalid_argument for an empty permit.
runtime& runtime_of(permit& p);

/// Starts the asynchronous exclusive (`exclusive` true) or shared acquire behind
/// async_lock() / async_lock_shared(); `done` runs exactly once, never before this returns,
/// with the hold's fencing token, or nullopt when the wait ran out.
/// @throws invalid_argument as async_lock() documents.
std::shared_ptr<async_operation> start_async_lock(rw_lock& lock, bool exclusive,
                                                  std::chrono::milliseconds wait,
                                                  async_completion<std::uint64_t> done);
/// The runtime of `lock` (its pool's).
runtime& runtime_of(rw_lock& lock);

}  // namespace detail
}  // namespace redcoord

REDCOORD_API_END
