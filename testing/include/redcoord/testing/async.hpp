#pragma once
/// @file
/// Helpers for the tests of the async_* operations: a server with a runtime of the test's own
/// (runtime_server.hpp), and what a completion's failure was.

#include <redcoord/testing/runtime_server.hpp>

#include <boost/asio/error.hpp>
#include <boost/system/system_error.hpp>

#include <exception>
#include <memory>

namespace redcoord::testing {

/// True when `e` holds the `boost::system::system_error(boost::asio::error::operation_aborted)`
/// a cancelled async_* operation completes with; false for null or any other failure.
inline bool is_operation_aborted(const std::exception_ptr& e) {
    try {
        if (e) std::rethrow_exception(e);
    } catch (const boost::system::system_error& x) {
        return x.code() == boost::asio::error::operation_aborted;
    } catch (...) {}
    return false;
}

}  // namespace redcoord::testing
