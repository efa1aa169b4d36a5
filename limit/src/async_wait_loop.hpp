#pragma once
// The asynchronous form of lease.hpp's wait_for_release(), for the semaphore's and the
// rw_lock's async initiations: the same steps (listen for releases before each attempt,
// attempt under one waiter id, sleep until a release, the awaited lease's end or the
// deadline, a last attempt at the deadline, then leave the queue), each a callback on the
// runtime's event loop: the attempts over its pipelined link, the sleeps on a steady_timer
// ended early by the release waiter's watch. Nothing blocks and no thread is taken.

#include "lease.hpp"

#include <redcoord/core/detail/async_operation.hpp>
#include <redcoord/core/detail/async_script.hpp>
#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/reply.hpp>
#include <redcoord/core/script.hpp>

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace redcoord {
class runtime;
}

namespace redcoord::detail {

struct async_wait_spec {
    runtime* rt = nullptr;
    endpoint where;
    release_waiter* waiter = nullptr;  // the object's; outlives the operation
    std::chrono::steady_clock::time_point deadline;
    wait_policy policy;
    std::string what;  // "semaphore 'x'", for messages
    // The attempt under `waiter_id` ("" for a caller that will not wait).
    std::function<script_call(const std::string& waiter_id)> attempt;
    // Reads an attempt's reply (not an error reply), sent at `sent_at`; a grant is kept by
    // the caller. @throws protocol_error for a reply of another shape.
    std::function<wait_attempt(const reply& r, std::chrono::steady_clock::time_point sent_at)>
        settle;
    // Withdraws `waiter_id` from the queue.
    std::function<script_call(const std::string& waiter_id)> leave;
    // Gives back the grant settle() kept (a cancelled operation's), and forgets it.
    std::function<script_call()> give_back;
};

// Starts the loop; `done` runs exactly once on the event loop, never before this returns:
// (nullptr, true) granted, (nullptr, false) the deadline passed, (failure, false) an error
// or `boost::asio::error::operation_aborted` when cancelled. A cancelled or timed-out
// operation completes only once its queue entry is withdrawn and a grant it got given back
// (each bounded by the endpoint's command_timeout), so nothing of it is left behind then.
// @throws invalid_argument for an endpoint the pipelined link does not serve (Cluster).
std::shared_ptr<async_operation> start_async_wait(
    async_wait_spec spec, std::function<void(std::exception_ptr, bool)> done);

}  // namespace redcoord::detail
