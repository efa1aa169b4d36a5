#pragma once
/// @file
/// Asynchronous acquisition and release of a distributed_lock or redlock on the runtime's
/// event loop (Boost.Asio), with completion tokens: a callback, `boost::asio::use_future`,
/// `boost::asio::use_awaitable` (C++20 coroutines), or any other Asio completion token;
/// cancellable through Asio cancellation slots. Separate from distributed_lock.hpp so that only code that uses it
/// compiles Asio.

#include <redcoord/core/detail/async_initiate.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/lock/acquisition.hpp>
#include <redcoord/lock/detail/async_start.hpp>
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/lock/fair_lock.hpp>
#include <redcoord/lock/redlock.hpp>

#include <boost/asio/async_result.hpp>

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <utility>

REDCOORD_API_BEGIN
namespace redcoord {

/// Acquires `lock`, a distributed_lock, a redlock or a fair_lock, without blocking a thread:
/// the asynchronous form of its acquire(wait), with the same algorithm (the Redlock page's
/// "Correct Implementation with a Single Instance" and "The Redlock algorithm": a Redlock
/// attempt goes to every master at once, each bounded by node_timeout, and counts a majority
/// within the validity; the waits of docs/lock.md: a release notification over the runtime's
/// shared pub/sub links, else the holder's TTL).
///
/// A fair_lock keeps its FIFO discipline (docs/lock.md, after Redisson's RFairLock, with
/// leases): the call queues under the object's waiter id, refreshes its waiter lease every
/// waiter_lease/3 while it waits, is woken by the hand-off on its own channel (or when the
/// holder's or a dead head's lease runs out: a dead waiter is skipped), and at its deadline
/// makes a last attempt that, refused, takes it out of the queue. A cancelled or timed-out
/// fair acquire completes only once its queue entry and waiter lease are removed (and a
/// grant its last attempt won is given back), so nothing of it is left when its handler runs.
///
/// Completes with `void(std::exception_ptr, std::optional<lock_acquisition>)`: the
/// acquisition (the lock is then held by `lock`, exactly as after acquire(): release() or
/// unlock() it, its watchdog and on_lost work as usual), nullopt when `wait` (milliseconds;
/// zero: one attempt) ran out, or an exception: connection_error, auth_error,
/// permission_error, timeout_error or reply_error as acquire() throws them (a Redlock:
/// quorum_unreachable when no majority could be reached), and
/// `boost::system::system_error(boost::asio::error::operation_aborted)` when cancelled. With
/// `use_future` the future throws them; with `use_awaitable` the `co_await` does.
///
/// Cancellation (an Asio cancellation slot bound to the token, any cancellation type): a
/// wait ends at once; an attempt already sent ends when its reply comes, and a lock it got is
/// given back (released) before the operation completes, so a cancelled acquire leaves no
/// key. Its waiter entry (bounded unfairness) lapses after its grace (50 ms), as a timed-out
/// acquire's does (a fair_lock's is removed before completing, as above).
///
/// Its Redis commands go through the runtime's pipelined link for the endpoint (one socket
/// for every asynchronous operation of the runtime on it), and its timers run on the
/// runtime's event loop: no thread blocks while it waits. The completion handler runs on its
/// associated executor; a handler without one runs on the caller's io_context when the runtime
/// was made with runtime::create(io), else on the runtime's callback executor (a strand of its
/// own), never on the runtime's I/O thread, so a slow handler delays no other operation.
///
/// Supported on TCP endpoints, plain or TLS, unix-socket and Sentinel endpoints (the master the
/// sentinels name, followed across failovers), without `replication.replicas`: Cluster
/// endpoints and `replication.replicas > 0` throw invalid_argument from this call (use
/// acquire() on a thread of your own there).
///
/// @throws invalid_argument as above, or when `wait` is negative, or when another acquire of
///         `lock` (synchronous or asynchronous) is under way or it is held (lock objects are
///         not recursive). Thrown by the initiation, before anything is sent.
///
/// Thread-safety: as acquire(): one acquire per lock object at a time; `lock` must outlive
/// the operation (destroying it while the operation runs is undefined).
template <detail::async_acquirable Lock, class CompletionToken>
auto async_acquire(Lock& lock, std::chrono::milliseconds wait, CompletionToken&& token) {
    using signature = void(std::exception_ptr, std::optional<lock_acquisition>);
    return boost::asio::async_initiate<CompletionToken, signature>(
        [&lock, wait](auto handler) {
            detail::initiate<lock_acquisition>(
                detail::runtime_of(lock), std::move(handler), [&](auto done) {
                    return detail::start_async_acquire(lock, wait, std::move(done));
                });
        },
        token);
}

/// Releases what `lock` (a distributed_lock or a redlock) holds without blocking a thread: the
/// asynchronous form of its release(), with the same script (the Redlock page's
/// compare-and-delete, sent to every node), over the runtime's pipelined link instead of a
/// pooled connection, so that a loop of async_acquire() and async_release() never waits for a
/// connection of the pool.
///
/// The holding is taken at once: when this call returns, `lock.held()` is false and the lock's
/// watchdog is stopped. The release goes out on the event loop; the lock object may be
/// acquired again as soon as the operation completes (an acquire sent after it on the same
/// link reaches the server after it).
///
/// Completes with `void(std::exception_ptr, std::optional<bool>)`: true when the key was
/// ours and is deleted (at a majority, for a Redlock), false when it was not ours any more
/// (expired, or taken by another after its TTL), nullopt when `lock` held nothing (nothing is
/// sent); or an exception as release() throws it: outcome_unknown when the verdict is not
/// known (a reply lost, too few nodes answered: the key ends by its TTL at worst),
/// connection_error, auth_error, permission_error, timeout_error or reply_error for the single
/// instance's node, and `boost::system::system_error(boost::asio::error::operation_aborted)`
/// when cancelled. Each request is bounded by the endpoint's command_timeout.
///
/// Cancellation (an Asio cancellation slot bound to the token, any cancellation type) ends
/// only the wait for the verdict: the release is sent regardless.
///
/// Completion executor, threads and supported endpoints: as async_acquire().
///
/// @throws invalid_argument for a Cluster endpoint (thrown by the initiation;
///         nothing is taken then).
///
/// Thread-safety: as release(); `lock` must outlive the operation.
template <detail::async_releasable Lock, class CompletionToken>
auto async_release(Lock& lock, CompletionToken&& token) {
    using signature = void(std::exception_ptr, std::optional<bool>);
    return boost::asio::async_initiate<CompletionToken, signature>(
        [&lock](auto handler) {
            detail::initiate<bool>(detail::runtime_of(lock), std::move(handler), [&](auto done) {
                return detail::start_async_release(lock, std::move(done));
            });
        },
        token);
}

}  // namespace redcoord

REDCOORD_API_END
