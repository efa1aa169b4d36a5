#pragma once
/// @file
/// An asynchronous operation under way on the runtime's event loop, as its starter sees it,
/// and how it completes.
/// Internal to redcoord; not a stable API.

#include <redcoord/core/export.hpp>

#include <boost/asio/error.hpp>
#include <boost/system/system_error.hpp>

#include <exception>
#include <functional>
#include <optional>

REDCOORD_API_BEGIN
namespace redcoord::detail {

/// What an async_* initiation keeps of the operation it started: a way to cancel it.
class async_operation {
public:
    virtual ~async_operation() = default;
    /// Asks the operation to end with boost::asio::error::operation_aborted; thread-safe, and
    /// harmless once it has completed.
    virtual void cancel() noexcept = 0;
};

/// The failure a cancelled async_* operation completes with:
/// `boost::system::system_error(boost::asio::error::operation_aborted)`, `what` its message.
inline std::exception_ptr operation_aborted(const char* what) {
    return std::make_exception_ptr(
        boost::system::system_error(boost::asio::error::operation_aborted, what));
}

/// How an asynchronous operation completes (on the event loop, before dispatching to the
/// caller's executor): the failure, or the value (nullopt: the wait or timeout ran out).
template <class T>
using async_completion = std::function<void(std::exception_ptr, std::optional<T>)>;

}  // namespace redcoord::detail

REDCOORD_API_END
