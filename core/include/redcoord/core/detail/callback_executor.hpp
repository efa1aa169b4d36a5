#pragma once
/// @file
/// An Asio executor that runs its work on the runtime's callback executor (a strand of its
/// own), never on the runtime's I/O thread: the default executor of an async_* operation's
/// completion handler when the runtime runs its own event loop. Internal to redcoord; not a
/// stable API.

#include <redcoord/core/detail/serial_executor.hpp>
#include <redcoord/core/export.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/execution.hpp>
#include <boost/asio/execution_context.hpp>

#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

REDCOORD_API_BEGIN
namespace redcoord {

class runtime;

namespace detail {

/// Runs work on one strand of a runtime's callback executor: in order, and never blocking the
/// caller of execute() (blocking.never). Copies share the strand.
///
/// Thread-safety: a value type; execute() may be called from any thread.
class callback_executor {
public:
    callback_executor(boost::asio::execution_context& context, std::shared_ptr<strand> s) noexcept
        : context_(&context), strand_(std::move(s)) {}

    /// Queues `f` on the strand (a throwing `f` is swallowed there, as every callback is).
    template <class F>
    void execute(F&& f) const {
        // std::function needs a copyable target; Asio's handlers may be move-only.
        auto held = std::make_shared<std::decay_t<F>>(std::forward<F>(f));
        strand_->post([held] { std::move (*held)(); });
    }

    [[nodiscard]] boost::asio::execution_context& query(
        boost::asio::execution::context_t) const noexcept {
        return *context_;
    }
    [[nodiscard]] static constexpr boost::asio::execution::blocking_t query(
        boost::asio::execution::blocking_t) noexcept {
        return boost::asio::execution::blocking_t::never;
    }
    [[nodiscard]] callback_executor require(
        boost::asio::execution::blocking_t::never_t) const noexcept {
        return *this;
    }

    friend bool operator==(const callback_executor& a, const callback_executor& b) noexcept {
        return a.strand_ == b.strand_;
    }
    friend bool operator!=(const callback_executor& a, const callback_executor& b) noexcept {
        return !(a == b);
    }

private:
    boost::asio::execution_context* context_;
    std::shared_ptr<strand> strand_;
};

/// The executor a completion handler without an associated executor runs on: the caller's
/// io_context when the runtime runs on it (runtime::create(io)), else a new strand of the
/// runtime's callback executor, so user code never runs on the runtime's own I/O thread.
boost::asio::any_io_executor completion_executor(runtime& rt);

}  // namespace detail
}  // namespace redcoord

REDCOORD_API_END
