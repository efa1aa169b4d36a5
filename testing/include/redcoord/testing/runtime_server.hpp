#pragma once
/// @file
/// A local server with a runtime of the test's own: what the async tests and the runtime
/// clock's tests (which advance that runtime's clock) share.

#include <redcoord/core/pool.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/testing/local_server.hpp>

#include <chrono>
#include <memory>

namespace redcoord::testing {

/// One local redis-server and a pool on a runtime of the test's own (its own I/O thread,
/// callback executor and clock), so a test sees only its own completions and moves only its
/// own clock. Tests derive from it to add their part's views of the server.
struct runtime_server {
    local_server server;                              ///< Started on construction.
    std::shared_ptr<runtime> rt = runtime::create();  ///< The test's own runtime.
    connection_pool pool;                             ///< On `rt`.

    /// The pool with the endpoint's default timeouts.
    runtime_server() : pool(server.endpoint(), {}, rt) {}
    /// The pool's commands time out after `command_timeout` (milliseconds): for tests that
    /// pause the server and must not wait the default timeout for each command.
    explicit runtime_server(std::chrono::milliseconds command_timeout)
        : pool(with_command_timeout(server.endpoint(), command_timeout), {}, rt) {}

private:
    static endpoint with_command_timeout(endpoint ep, std::chrono::milliseconds t) {
        ep.command_timeout = t;
        return ep;
    }
};

}  // namespace redcoord::testing
