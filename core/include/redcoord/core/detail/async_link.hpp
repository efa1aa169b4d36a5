#pragma once
/// @file
/// One pipelined connection to one Redis server on the runtime's event loop. Internal to
/// redcoord (reached through runtime::link()); not a stable API.

#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/core/fan_out.hpp>

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace boost::asio {
class io_context;
}

REDCOORD_API_BEGIN
namespace redcoord::detail {

/// What became of one command sent through an async_link.
struct link_outcome {
    /// answered (an error reply included), timeout (its deadline passed first: the reply,
    /// if it comes, is dropped), connection_failed (the link broke or could not connect).
    node_result result;
    /// The command reached the socket: a timeout or a broken link after that leaves its
    /// effect unknown; before it, nothing happened on the server.
    bool sent = false;
    /// A typed error for the caller when the command did not get a reply: auth_error or
    /// permission_error for a refused handshake, tls_error for a refused TLS handshake,
    /// connection_error, timeout_error.
    std::exception_ptr failure;
};

class master_source;
class timer_service;

/// Throws invalid_argument, naming `what` and `ep`, unless async_link reaches `ep` (one
/// server, over TCP with or without TLS or a unix socket, or the master behind a Sentinel
/// endpoint): what every async_* operation checks before it starts.
void require_event_loop_endpoint(const endpoint& ep, std::string_view what);

/// A connection shared by every asynchronous operation of a runtime on one endpoint:
/// commands are pipelined (written in batches, as they come) and replies matched to them in
/// order, as Boost.Redis and ioredis do, so any number of concurrent operations needs one
/// socket and no operation ever waits for a free connection.
///
/// The link connects on first use and again after it broke (the next command reconnects): a
/// TCP or unix-socket connect, with endpoint::tls the TLS handshake (Boost.Asio's ssl::stream
/// on the process's OpenSSL context for those options, the server's name checked as the
/// blocking connections check it), both bounded by the endpoint's connect_timeout, then the
/// handshake (AUTH, SELECT, PING) pipelined in front of the first commands. A command whose deadline
/// passes completes with timeout at once; its reply, when it comes, is dropped. A command
/// sent more than the endpoint's command_timeout ago and still unanswered breaks the link
/// (a stalled server): every command in flight completes with connection_failed.
///
/// One server: a direct endpoint, or the master behind a Sentinel endpoint. Before each
/// connect the sentinels are asked (on a tick worker, never on the loop's thread); the
/// handshake then checks ROLE, and a READONLY reply, a master-change notice or a broken link
/// reports the address to the resolver and drops the connection, so the next command goes to
/// the new master. Cluster endpoints are refused (invalid_argument). A TLS failure (an untrusted certificate, a plaintext port) fails the
/// pending commands with tls_error; a CA or key file that cannot be loaded throws tls_error
/// from create().
///
/// Thread-safety: exec() and close() may be called from any thread; handlers run on the
/// link's strand of the io_context, one at a time, and must not block.
class async_link : public std::enable_shared_from_this<async_link> {
public:
    using clock_type = std::chrono::steady_clock;
    using handler = std::function<void(link_outcome)>;

    /// A link to `ep`; for a Sentinel endpoint, to the master `source` (the runtime's resolver
    /// of that service) names, asked on a tick worker of `timers` whenever the link connects.
    /// @throws invalid_argument for a Cluster endpoint, or a Sentinel one without `source` and
    ///         `timers`; tls_error when the TLS options' CA, certificate or key file cannot be
    ///         loaded.
    static std::shared_ptr<async_link> create(boost::asio::io_context& io, const endpoint& ep,
                                              std::shared_ptr<master_source> source = {},
                                              timer_service* timers = nullptr);
    ~async_link();
    async_link(const async_link&) = delete;
    async_link& operator=(const async_link&) = delete;

    /// Sends `argv` and calls `h` exactly once, on the link's strand: with the reply, or
    /// when `deadline` passes, or when the link breaks or cannot connect.
    void exec(std::vector<std::string> argv, clock_type::time_point deadline, handler h);
    /// The same for a command already in RESP (`wire`, shared with the caller, who may keep it
    /// to send again): the link lets go of it once written.
    void exec_encoded(std::shared_ptr<const std::string> wire, clock_type::time_point deadline,
                      handler h);
    /// Fails every pending command (connection_failed) and closes the socket; a later exec()
    /// connects again.
    void close();
    /// Where it connects, for messages.
    [[nodiscard]] const std::string& where() const noexcept;
    /// Commands written and not yet answered or given up (tests, stats).
    [[nodiscard]] std::size_t in_flight() const noexcept;

    struct state;

private:
    async_link(boost::asio::io_context& io, const endpoint& ep);
    std::shared_ptr<state> s_;
};

}  // namespace redcoord::detail

REDCOORD_API_END
