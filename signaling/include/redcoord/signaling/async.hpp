#pragma once
/// @file
/// Asynchronous signal waits and barrier arrivals on the runtime's event loop (Boost.Asio),
/// with completion tokens: a callback, `boost::asio::use_future`, `boost::asio::use_awaitable`
/// (C++20 coroutines), or any other Asio completion token; cancellable through Asio
/// cancellation slots. Separate from signal_hub.hpp and barrier.hpp so that only code that
/// uses it compiles Asio.

#include <redcoord/core/detail/async_initiate.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/signaling/barrier.hpp>
#include <redcoord/signaling/detail/async_start.hpp>
#include <redcoord/signaling/latch.hpp>
#include <redcoord/signaling/signal_hub.hpp>

#include <boost/asio/async_result.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>

REDCOORD_API_BEGIN
namespace redcoord {

/// Waits for the next signal of `w` without blocking a thread: the asynchronous form of
/// waiter::wait(timeout).
///
/// Completes with `void(std::exception_ptr, std::optional<redcoord::signal>)`: the oldest
/// queued signal (at once when one is queued), or nullopt when `timeout` (milliseconds; zero
/// does not wait; milliseconds::max(), or anything beyond ten years, waits without a
/// deadline) ran out first or the hub was destroyed. The only exception it completes with is
/// `boost::system::system_error(boost::asio::error::operation_aborted)` when cancelled; with
/// `use_future` the future throws it, with `use_awaitable` the `co_await` does.
///
/// Cancellation (an Asio cancellation slot bound to the token, any cancellation type): the
/// wait ends at once and takes no signal; later signals stay queued for the waiter's next
/// wait, blocking or not.
///
/// The signals come as for wait(): the hub's subscriptions on the runtime's pub/sub links,
/// read by the runtime's pub/sub reader. The operation registers a wake-up on the waiter's
/// queue (the reader only posts it to the operation's strand) and a steady_timer for the
/// timeout on the runtime's event loop: no thread blocks and no socket is read on the event
/// loop. The completion handler runs on its associated executor; one without runs on the
/// caller's io_context (runtime::create(io)) or on the runtime's callback executor, never on
/// the runtime's own I/O thread.
///
/// @throws invalid_argument when `timeout` is negative or `w` is empty (moved from). Thrown
///         by the initiation.
///
/// Thread-safety: as wait(): several waits (blocking or not) may share one waiter, each signal
/// is returned once. The operation keeps the waiter's queue alive: `w` may be destroyed while
/// it runs (it then ends at its timeout with nullopt).
template <class CompletionToken>
auto async_wait(waiter& w, std::chrono::milliseconds timeout, CompletionToken&& token) {
    using signature = void(std::exception_ptr, std::optional<redcoord::signal>);
    return boost::asio::async_initiate<CompletionToken, signature>(
        [&w, timeout](auto handler) {
            detail::initiate<redcoord::signal>(
                detail::runtime_of(w), std::move(handler),
                [&](auto done) { return detail::start_async_wait(w, timeout, std::move(done)); });
        },
        token);
}

/// Arrives at `b` and waits, without blocking a thread, until its parties have arrived: the
/// asynchronous form of barrier::arrive_and_wait(timeout), with the same protocol (one script
/// arrives, refreshes the arrival's lease every arrival_lease / 3 and re-reads the state,
/// withdraws at the timeout; the generation's channel wakes the waiters; docs/signaling.md).
/// Each call is one party, as each blocking call is; asynchronous and blocking parties mix.
///
/// Completes with `void(std::exception_ptr, std::optional<std::uint64_t>)`: the generation
/// that passed (0 for the first); nullopt when `timeout` (milliseconds, counted from the call;
/// milliseconds::max() waits without a deadline) passed first and the arrival was withdrawn
/// (the blocking form throws barrier_timeout there); or an exception: barrier_lease_lost (the
/// lease lapsed and the generation passed, or the barrier was force-reset, without this
/// party), invalid_argument (the barrier exists with another party count), connection_error
/// (the master refused or dropped the connection, or no link confirmed the channel's
/// subscription within signal_options::subscribe_timeout), timeout_error, reply_error or
/// permission_error from the master, and `boost::system::system_error(
/// boost::asio::error::operation_aborted)` when cancelled.
///
/// Cancellation (an Asio cancellation slot bound to the token, any cancellation type): a wait
/// ends with the withdrawal's reply (one round trip), so a cancelled arrival leaves no entry;
/// when the generation passed with this party counted before the withdrawal ran, the
/// operation completes with that generation instead (it did pass).
///
/// Unlike a blocking call, an asynchronous one that ends with a connection or reply error
/// is not resumed by the next call (there is no calling thread to tie it to): its arrival may
/// count until its lease lapses (arrival_lease).
///
/// Its scripts go through the runtime's pipelined link for the master's endpoint; the wake-up
/// comes from the hub's subscription (a callback that posts to the operation's strand); the
/// lease refresh and the timeout are steady_timers on the runtime's event loop. Supported
/// for a hub on a TCP endpoint, plain or TLS, a unix-socket or a Sentinel one: Cluster
/// endpoints throw invalid_argument from this call (use arrive_and_wait() on a thread of your own there).
///
/// @throws invalid_argument as above, or when `timeout` is negative. Thrown by the initiation,
///         before anything is sent.
///
/// Thread-safety: as arrive_and_wait(); `b` and its hub must outlive the operation.
template <class CompletionToken>
auto async_arrive_and_wait(barrier& b, std::chrono::milliseconds timeout, CompletionToken&& token) {
    using signature = void(std::exception_ptr, std::optional<std::uint64_t>);
    return boost::asio::async_initiate<CompletionToken, signature>(
        [&b, timeout](auto handler) {
            detail::initiate<std::uint64_t>(
                detail::runtime_of(b), std::move(handler),
                [&](auto done) { return detail::start_async_arrive(b, timeout, std::move(done)); });
        },
        token);
}

/// Waits until `l` is open (its count reached zero) without blocking a thread: the
/// asynchronous form of latch::wait(timeout), with its algorithm (subscribe to the latch's
/// channel, then read the count, then wait for a count-down's notice or the recheck interval,
/// docs/signaling.md).
///
/// Completes with `void(std::exception_ptr, std::optional<bool>)`: `true` once the latch is
/// open, nullopt when `timeout` (milliseconds; zero: one look) ran out, or an exception:
/// connection_error, auth_error, permission_error, timeout_error or reply_error as wait()
/// throws them, and `boost::system::system_error(boost::asio::error::operation_aborted)` when
/// cancelled (a cancelled wait ends at once; it changes nothing on the server).
///
/// The subscription is made by this call (as signal_hub::listen(), on the calling thread); the
/// reads of the count go through the runtime's pipelined link for the master's endpoint; the
/// waits are async_wait on that subscription. Supported for a hub on a TCP endpoint,
/// plain or TLS, a unix-socket or a Sentinel one: Cluster endpoints throw invalid_argument
/// from this call (use wait() on a thread of your own there).
///
/// @throws invalid_argument as above, or when `timeout` is negative. Thrown by the initiation,
///         before anything is sent.
///
/// Thread-safety: any number of waits of one latch may run at once; `l` and its hub must
/// outlive the operation.
template <class CompletionToken>
auto async_wait(latch& l, std::chrono::milliseconds timeout, CompletionToken&& token) {
    using signature = void(std::exception_ptr, std::optional<bool>);
    return boost::asio::async_initiate<CompletionToken, signature>(
        [&l, timeout](auto handler) {
            detail::initiate<bool>(detail::runtime_of(l), std::move(handler), [&](auto done) {
                return detail::start_async_latch_wait(l, timeout, std::move(done));
            });
        },
        token);
}

}  // namespace redcoord

REDCOORD_API_END
