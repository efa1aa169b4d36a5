#pragma once
/// @file
/// Helpers for the tests of the async_* operations: a server with a runtime of the test's own,
/// and what a completion's failure was.

#include <redcoord/core/pool.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/testing/local_server.hpp>

#include <boost/asio/error.hpp>
#include <boost/system/system_error.hpp>

#include <exception>
#include <memory>

namespace redcoord::testing {

/// One local redis-server and a pool on a runtime of the test's own (its own I/O thread and
/// callback executor), so an async test sees only its own completions. Tests derive from it
/// to add their part's views of the server.
struct runtime_server {
    local_server server;                              ///< Started on construction.
    std::shared_ptr<runtime> rt = runtime::create();  ///< The test's own runtime.
    connection_pool pool{server.endpoint(), {}, rt};  ///< On `rt`.
};

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
