#pragma once
/// @file
/// Asynchronous acquisition (and release) of a semaphore's permits, and acquisition of an
/// rw_lock's holds, on the runtime's event loop (Boost.Asio), with completion tokens: a callback, `boost::asio::use_future`,
/// `boost::asio::use_awaitable` (C++20 coroutines), or any other Asio completion token;
/// cancellable through Asio cancellation slots. Separate from semaphore.hpp so that only
/// code that uses it compiles Asio.

#include <redcoord/core/detail/async_initiate.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/limit/detail/async_start.hpp>
#include <redcoord/limit/rw_lock.hpp>
#include <redcoord/limit/semaphore.hpp>

#include <boost/asio/async_result.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>
#include <utility>

REDCOORD_API_BEGIN
namespace redcoord {

/// Acquires `n` permits of `sem` without blocking a thread: the asynchronous form of
/// `sem.try_acquire_for(n, wait)`, with the same script and waiting (docs/limit.md: each
/// permit a lease in a sorted set; a refused caller queues under one waiter id per call, so
/// newcomers do not barge past it, and with `semaphore_options::fifo` only the queue's live
/// head is served; a dead waiter's entry lapses after its sleep plus a grace). It waits for a
/// release notification over the runtime's shared pub/sub link, else for the end of the lease
/// it waits for (a lease that ends publishes nothing); never by polling while the link is up.
///
/// Completes with `void(std::exception_ptr, std::optional<permit>)`: the permit (held, its
/// lease and watchdog as try_acquire_for()'s), nullopt when `wait` (milliseconds; zero: one
/// attempt) ran out, or an exception: connection_error, auth_error, permission_error,
/// timeout_error, reply_error or protocol_error as try_acquire_for() throws them, and
/// `boost::system::system_error(boost::asio::error::operation_aborted)` when cancelled. With
/// `use_future` the future throws them; with `use_awaitable` the `co_await` does.
///
/// Cancellation (an Asio cancellation slot bound to the token, any cancellation type): a
/// wait ends at once; an attempt already sent ends when its reply comes, and permits it got
/// are given back. The operation completes only after its waiter entry (and fifo queue
/// entry) is withdrawn and any permits given back, so a cancelled or timed-out acquire
/// leaves nothing behind when its handler runs (unless the server could not be reached: then
/// the entry lapses after its grace and the leases after their TTL).
///
/// Its commands go through the runtime's pipelined link for the endpoint and its timers run
/// on the runtime's event loop: no thread blocks while it waits. The completion handler runs
/// on its associated executor; a handler without one runs on the caller's io_context when the
/// runtime was made with runtime::create(io), else on the runtime's callback executor, never
/// on the runtime's I/O thread.
///
/// Supported on TCP endpoints, plain or TLS, unix-socket and Sentinel endpoints, without
/// `replication.replicas`.
///
/// @throws invalid_argument (from the initiation, before anything is sent) when `n` is 0 or
///         above the semaphore's permits, when `wait` is negative, for a Cluster endpoint,
///         or when `semaphore_options::replication.replicas` > 0.
///
/// Thread-safety: any number of acquires of one semaphore may run at once, from any thread;
/// `sem` must outlive the operation (the permit may outlive it, as try_acquire_for()'s).
template <class CompletionToken>
auto async_acquire(semaphore& sem, std::uint64_t n, std::chrono::milliseconds wait,
                   CompletionToken&& token) {
    using signature = void(std::exception_ptr, std::optional<permit>);
    return boost::asio::async_initiate<CompletionToken, signature>(
        [&sem, n, wait](auto handler) {
            detail::initiate<permit>(detail::runtime_of(sem), std::move(handler), [&](auto done) {
                return detail::start_async_acquire(sem, n, wait, std::move(done));
            });
        },
        token);
}

/// Releases the permits `p` holds without blocking a thread: the asynchronous form of
/// `p.release()`, the same script sent over the runtime's pipelined link instead of a pooled
/// connection (so a coroutine on the event loop's thread never waits for the pool). When this
/// call returns, `p.held()` is false and its watchdog is stopped.
///
/// Completes with `void(std::exception_ptr, std::optional<bool>)`: true when all its permits
/// were still held (they are free now, and queued waiters are woken), false when some had
/// lapsed (their leases ended), nullopt when `p` was released before (nothing is sent); or an
/// exception: reply_error or permission_error for an error reply, outcome_unknown when the
/// reply was lost (the leases end by their TTL at worst), and
/// `boost::system::system_error(boost::asio::error::operation_aborted)` when cancelled
/// (cancellation ends only the wait for the reply: the release is sent regardless). Bounded
/// by the endpoint's command_timeout.
///
/// @throws invalid_argument (from the initiation) for an empty permit (default-constructed or
///         moved from) or a Cluster endpoint.
///
/// Thread-safety: as release(); `p` need not outlive the operation.
template <class CompletionToken>
auto async_release(permit& p, CompletionToken&& token) {
    using signature = void(std::exception_ptr, std::optional<bool>);
    return boost::asio::async_initiate<CompletionToken, signature>(
        [&p](auto handler) {
            detail::initiate<bool>(detail::runtime_of(p), std::move(handler), [&](auto done) {
                return detail::start_async_release(p, std::move(done));
            });
        },
        token);
}

/// Takes the exclusive hold of `lock` without blocking a thread: the asynchronous form of
/// `lock.try_lock_for(wait)` (named after lock(), as async_lock_shared() after
/// lock_shared()), with the same scripts and waiting (docs/limit.md: a writer-preferring
/// read-write lock; a waiting writer keeps an intent that holds new readers back and refreshes
/// it at least every max_retry_interval; it is woken by a release notification over the
/// runtime's shared pub/sub link).
///
/// Completes with `void(std::exception_ptr, std::optional<std::uint64_t>)`: the hold's
/// fencing token when taken (the hold is then recorded in `lock` exactly as lock()'s, for the
/// thread that called async_lock(): unlock() ends it, owns_lock() and fencing_token() see it,
/// its watchdog and on_lost work as usual), nullopt when `wait` (milliseconds; zero: one
/// attempt) ran out, or an exception: connection_error, auth_error, permission_error,
/// timeout_error, reply_error or protocol_error as try_lock_for() throws them, and
/// `boost::system::system_error(boost::asio::error::operation_aborted)` when cancelled.
///
/// Cancellation, a timeout, the completion executor, threads and endpoints: as
/// async_acquire(semaphore&, ...): a cancelled or timed-out call withdraws its intent and
/// waiter entry, and gives back a hold it got, before its handler runs.
///
/// @throws invalid_argument (from the initiation, before anything is sent) when `wait` is
///         negative, for a Cluster endpoint, when the calling thread holds
///         `lock` exclusively, or holds a share of it (no upgrade: it would wait for itself).
///
/// Thread-safety: as try_lock_for(); `lock` must outlive the operation.
template <class CompletionToken>
auto async_lock(rw_lock& lock, std::chrono::milliseconds wait, CompletionToken&& token) {
    using signature = void(std::exception_ptr, std::optional<std::uint64_t>);
    return boost::asio::async_initiate<CompletionToken, signature>(
        [&lock, wait](auto handler) {
            detail::initiate<std::uint64_t>(
                detail::runtime_of(lock), std::move(handler), [&](auto done) {
                    return detail::start_async_lock(lock, true, wait, std::move(done));
                });
        },
        token);
}

/// Takes a share of `lock` without blocking a thread: the asynchronous form of
/// `lock.try_lock_shared_for(wait)`; as async_lock() otherwise. The share is recorded for the
/// thread that called async_lock_shared(): unlock_shared() ends it.
///
/// Completes with `void(std::exception_ptr, std::optional<std::uint64_t>)`: the share's
/// fencing token, nullopt when `wait` ran out, or an exception as async_lock() documents.
///
/// @throws invalid_argument (from the initiation) when `wait` is negative, for a
///         Cluster endpoint, or when the calling thread holds `lock` exclusively.
///
/// Thread-safety: as try_lock_shared_for(); `lock` must outlive the operation.
template <class CompletionToken>
auto async_lock_shared(rw_lock& lock, std::chrono::milliseconds wait, CompletionToken&& token) {
    using signature = void(std::exception_ptr, std::optional<std::uint64_t>);
    return boost::asio::async_initiate<CompletionToken, signature>(
        [&lock, wait](auto handler) {
            detail::initiate<std::uint64_t>(
                detail::runtime_of(lock), std::move(handler), [&](auto done) {
                    return detail::start_async_lock(lock, false, wait, std::move(done));
                });
        },
        token);
}

}  // namespace redcoord

REDCOORD_API_END
