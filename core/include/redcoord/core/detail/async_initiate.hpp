#pragma once
/// @file
/// The body every async_* initiation of redcoord shares (lock, signaling): start the
/// operation, complete the handler on its associated executor, wire its cancellation slot.
/// Internal to redcoord; not a stable API.

#include <redcoord/core/detail/async_operation.hpp>
#include <redcoord/core/detail/callback_executor.hpp>
#include <redcoord/core/export.hpp>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>

#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <utility>

REDCOORD_API_BEGIN
namespace redcoord::detail {

/// Starts the operation with `start(done)` (which returns its async_operation and calls `done`
/// exactly once, never before it returns) and completes `handler` with
/// `(std::exception_ptr, std::optional<T>)` on its associated executor, by default
/// completion_executor(rt) (never the runtime's own I/O thread). A connected cancellation slot
/// of the handler cancels the operation; the slot is cleared before the handler runs.
template <class T, class Handler, class Start>
void initiate(runtime& rt, Handler handler, Start&& start) {
    auto slot = boost::asio::get_associated_cancellation_slot(handler);
    auto ex = boost::asio::get_associated_executor(handler, completion_executor(rt));
    // std::function needs a copyable target: the handler moves into shared state.
    auto state = std::make_shared<std::optional<Handler>>(std::move(handler));
    auto work = std::make_shared<boost::asio::executor_work_guard<decltype(ex)>>(ex);
    std::shared_ptr<async_operation> op =
        std::forward<Start>(start)([state, work](std::exception_ptr e, std::optional<T> v) {
            auto target = work->get_executor();
            boost::asio::dispatch(target, [state, work, e, v = std::move(v)]() mutable {
                auto h = std::move(**state);
                state->reset();
                auto s = boost::asio::get_associated_cancellation_slot(h);
                if (s.is_connected()) s.clear();
                work->reset();
                std::move(h)(e, std::move(v));
            });
        });
    if (slot.is_connected()) slot.assign([op](boost::asio::cancellation_type) { op->cancel(); });
}

}  // namespace redcoord::detail

REDCOORD_API_END
