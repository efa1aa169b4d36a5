#pragma once
/// @file
/// Asynchronous wait for leadership of a leader_elector on the runtime's event loop
/// (Boost.Asio), with completion tokens: a callback, `boost::asio::use_future`,
/// `boost::asio::use_awaitable` (C++20 coroutines), or any other Asio completion token;
/// cancellable through Asio cancellation slots. Separate from leader_elector.hpp so that only
/// code that uses it compiles Asio.

#include <redcoord/core/detail/async_initiate.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/election/detail/async_start.hpp>
#include <redcoord/election/leader_elector.hpp>

#include <boost/asio/async_result.hpp>

#include <chrono>
#include <exception>
#include <optional>

REDCOORD_API_BEGIN
namespace redcoord {

/// Waits, without blocking a thread, until `elector` leads: the asynchronous form of polling
/// is_leader() / current_leadership(). The elector campaigns as it always does (its rounds on
/// the runtime's timer service, a follower campaigning at once on a leader's handoff signal,
/// docs/election.md); this call only listens to its state transitions.
///
/// Completes with `void(std::exception_ptr, std::optional<leader_elector::leadership>)`:
/// - the leadership (its epoch, the fencing token, and its stop token, exactly as
///   current_leadership() returns them) at once when the elector leads at the call, else at
///   the transition that makes it leader (the handler may run after that leadership ended:
///   leader work watches its stop token, which the elector stops when the leadership ends,
///   whatever the handler does);
/// - nullopt when `timeout` (milliseconds; zero: one look; milliseconds::max(), or anything
///   beyond ten years, waits without a deadline) ran out first;
/// - `boost::system::system_error(boost::asio::error::operation_aborted)` when cancelled, or
///   when the elector is stopped (stop() or its destructor) while the wait runs;
/// - permission_error when a campaign round is refused by the server's ACL (it will not go
///   away by itself; leader_elector::last_error() has it too). Other round failures
///   (connection_error, timeout_error) are not reported: the elector keeps campaigning and
///   the wait goes on until its timeout, as a blocking poll of is_leader() would.
///
/// With `use_future` the future throws them; with `use_awaitable` the `co_await` does.
///
/// The elector need not be started yet: the wait then covers a later start(). A wait on an
/// elector that is never started ends at its timeout (or by stop()).
///
/// Cancellation (an Asio cancellation slot bound to the token, any cancellation type): the
/// wait ends at once and leaves nothing registered in the elector; it changes nothing on the
/// server (the elector's own campaign goes on: call resign() or stop() to leave the election).
///
/// The operation registers a watcher with the elector (called under the elector's lock by the
/// transition itself; it only posts the news to the operation's strand) and a steady_timer for
/// the timeout, both on the runtime's event loop: no thread waits, nothing polls. The
/// completion handler runs on its associated executor; one without runs on the caller's
/// io_context (runtime::create(io)) or on the runtime's callback executor (a strand of its
/// own), never on the runtime's own I/O thread.
///
/// @throws invalid_argument when `timeout` is negative. Thrown by the initiation.
///
/// Thread-safety: any number of waits of one elector may run at once, from any thread. The
/// elector may be stopped or destroyed while a wait runs (it then completes with
/// operation_aborted).
template <class CompletionToken>
auto async_wait_until_leader(leader_elector& elector, std::chrono::milliseconds timeout,
                             CompletionToken&& token) {
    using signature = void(std::exception_ptr, std::optional<leader_elector::leadership>);
    return boost::asio::async_initiate<CompletionToken, signature>(
        [&elector, timeout](auto handler) {
            detail::initiate<leader_elector::leadership>(
                detail::runtime_of(elector), std::move(handler), [&](auto done) {
                    return detail::start_async_wait_until_leader(elector, timeout, std::move(done));
                });
        },
        token);
}

}  // namespace redcoord

REDCOORD_API_END
