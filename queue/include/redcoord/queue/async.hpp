#pragma once
/// @file
/// Asynchronous pop of a reliable_queue on the runtime's event loop (Boost.Asio), with
/// completion tokens: a callback, `boost::asio::use_future`, `boost::asio::use_awaitable`
/// (C++20 coroutines), or any other Asio completion token; cancellable through Asio
/// cancellation slots. Separate from reliable_queue.hpp so that only code that uses it
/// compiles Asio.

#include <redcoord/core/detail/async_initiate.hpp>
#include <redcoord/core/detail/async_operation.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/queue/reliable_queue.hpp>

#include <boost/asio/async_result.hpp>

#include <chrono>
#include <exception>
#include <memory>
#include <optional>
#include <utility>

REDCOORD_API_BEGIN
namespace redcoord {

class runtime;

namespace detail {

runtime& runtime_of(reliable_queue& q);
std::shared_ptr<async_operation> start_async_pop(reliable_queue& q,
                                                 std::chrono::milliseconds timeout,
                                                 async_completion<delivery> done);

}  // namespace detail

/// Pops a message from `q` without blocking a thread: the asynchronous form of
/// reliable_queue::pop(timeout), with its lease rules (a message is moved into this consumer's
/// processing list only while its registration is known to outlive the move, else by the
/// script that renews it first, docs/queue.md), but no blocking command: each attempt is a
/// non-blocking LMOVE (or the renew-then-move script) on the runtime's pipelined link. On an
/// empty queue it waits, sending nothing, for the notice push() publishes on the queue's
/// channel (one listener per queue object on the runtime's shared pub/sub link, however many
/// pops wait), then tries again. For a message no notice announced (another client's plain
/// LPUSH) the queue object checks its ready list every
/// reliable_queue_options::async_pop_recheck (default 1 s), one LLEN for all its pending pops,
/// and wakes them when it finds one. While the channel's subscription is not confirmed (a
/// notice could be missed then) the pop tries again by itself every 1 ms doubling to 100 ms.
/// It tries once more when `timeout` runs out.
///
/// Completes with `void(std::exception_ptr, std::optional<delivery>)`: the delivery (ack() or
/// nack() it as one from pop()), nullopt when `timeout` (milliseconds; zero: one attempt) ran
/// out, or an exception: connection_error, auth_error, permission_error, timeout_error or
/// reply_error as pop() throws them; permission_error naming `subscribe` when the pop has to
/// wait and the server refused the subscription of the queue's channel (an ACL user without
/// the `queue:*` channels of queue_acl_needs()); and
/// `boost::system::system_error(boost::asio::error::operation_aborted)` when cancelled. With
/// `use_future` the future throws them; with `use_awaitable` the `co_await` does.
///
/// Cancellation (an Asio cancellation slot bound to the token, any cancellation type): a wait
/// ends at once; an attempt already sent ends when its reply comes, and a message it moved is
/// given back to the head of the queue (attempts unchanged) before the operation completes,
/// so a cancelled pop loses and reorders nothing.
///
/// The first pop of a queue object (synchronous or asynchronous) registers its consumer and
/// runs the start-up release and recovery with blocking commands on the calling thread, as
/// pop() does; later ones never block. The completion handler runs on its associated
/// executor; a handler without one runs on the caller's io_context when the runtime was made
/// with runtime::create(io), else on the runtime's callback executor, never on its I/O thread.
///
/// Supported on TCP endpoints, plain or TLS, unix-socket and Sentinel endpoints, without
/// `replication.replicas`: Cluster endpoints and `replication.replicas > 0` throw
/// invalid_argument from this call (use pop() on a thread of your own there).
///
/// @throws invalid_argument as above, or when `timeout` is negative. Thrown by the
///         initiation, before anything is sent.
///
/// Thread-safety: as pop(): any number of pops of one queue object may run at once; `q` must
/// outlive the operation.
template <class CompletionToken>
auto async_pop(reliable_queue& q, std::chrono::milliseconds timeout, CompletionToken&& token) {
    using signature = void(std::exception_ptr, std::optional<delivery>);
    return boost::asio::async_initiate<CompletionToken, signature>(
        [&q, timeout](auto handler) {
            detail::initiate<delivery>(detail::runtime_of(q), std::move(handler), [&](auto done) {
                return detail::start_async_pop(q, timeout, std::move(done));
            });
        },
        token);
}

}  // namespace redcoord

REDCOORD_API_END
