#pragma once
/// @file
/// The non-template half of redcoord/signaling/async.hpp: what its initiations call, and the
/// adapter from a completion handler to the callback the operations complete with. Internal
/// to redcoord; not a stable API.

#include <redcoord/core/detail/async_operation.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/signaling/signal_hub.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <utility>

REDCOORD_API_BEGIN
namespace redcoord {

class barrier;
class latch;
class runtime;

namespace detail {

/// Starts the operation behind async_wait(); `done` runs exactly once, never before this
/// returns. @throws invalid_argument as async_wait() documents.
std::shared_ptr<async_operation> start_async_wait(waiter& w, std::chrono::milliseconds timeout,
                                                  async_completion<redcoord::signal> done);
/// The runtime of `w`'s hub. @throws invalid_argument for an empty (moved-from) waiter.
runtime& runtime_of(const waiter& w);

/// Starts the operation behind async_arrive_and_wait(); as start_async_wait().
std::shared_ptr<async_operation> start_async_arrive(barrier& b, std::chrono::milliseconds timeout,
                                                    async_completion<std::uint64_t> done);
/// The runtime of `b`'s hub.
runtime& runtime_of(barrier& b);

std::shared_ptr<async_operation> start_async_latch_wait(latch& l, std::chrono::milliseconds timeout,
                                                        async_completion<bool> done);
runtime& runtime_of(latch& l);

}  // namespace detail
}  // namespace redcoord

REDCOORD_API_END
