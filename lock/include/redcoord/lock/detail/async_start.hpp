#pragma once
/// @file
/// The non-template half of redcoord/lock/async.hpp: what its initiations call. Internal to
/// redcoord; not a stable API.

#include <redcoord/core/detail/async_operation.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/lock/acquisition.hpp>

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <type_traits>

REDCOORD_API_BEGIN
namespace redcoord {

class distributed_lock;
class fair_lock;
class runtime;
class redlock;

namespace detail {

/// How an asynchronous acquire completes (on the event loop, before dispatching to the
/// caller's executor): the failure, or the acquisition (nullopt: the wait ran out).
using acquire_completion = async_completion<lock_acquisition>;

/// Starts the asynchronous acquire behind async_acquire(); `done` runs exactly once, never
/// before this returns.
/// @throws invalid_argument as async_acquire() documents.
std::shared_ptr<async_operation> start_async_acquire(distributed_lock& lock,
                                                     std::chrono::milliseconds wait,
                                                     acquire_completion done);
/// The same for a Redlock.
std::shared_ptr<async_operation> start_async_acquire(redlock& lock, std::chrono::milliseconds wait,
                                                     acquire_completion done);
/// The same for a fair_lock.
std::shared_ptr<async_operation> start_async_acquire(fair_lock& lock,
                                                     std::chrono::milliseconds wait,
                                                     acquire_completion done);
/// Starts the asynchronous release behind async_release(); `done` runs exactly once, never
/// before this returns, with true (released), false (not ours any more) or nullopt (nothing
/// was held).
/// @throws invalid_argument as async_release() documents.
std::shared_ptr<async_operation> start_async_release(distributed_lock& lock,
                                                     async_completion<bool> done);
/// The same for a Redlock.
std::shared_ptr<async_operation> start_async_release(redlock& lock, async_completion<bool> done);
/// The runtime of `lock` (a Redlock's: its first node's pool's).
runtime& runtime_of(distributed_lock& lock);
/// The same for a Redlock.
runtime& runtime_of(redlock& lock);
/// The same for a fair_lock (its pool's).
runtime& runtime_of(fair_lock& lock);

/// The lock classes async_release() takes.
template <class Lock>
concept async_releasable = std::is_same_v<Lock, distributed_lock> || std::is_same_v<Lock, redlock>;

/// The lock classes async_acquire() takes.
template <class Lock>
concept async_acquirable = async_releasable<Lock> || std::is_same_v<Lock, fair_lock>;

}  // namespace detail
}  // namespace redcoord

REDCOORD_API_END
