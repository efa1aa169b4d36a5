#pragma once
/// @file
/// One blocking connection to one Redis server, over hiredis (which stays private to core).

#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/reply.hpp>

#include <chrono>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace redcoord {

namespace detail {
struct connection_access;
}

/// A move-only RAII connection to one Redis server.
///
/// Opening connects with `endpoint::connect_timeout`, authenticates (AUTH [user] password),
/// selects the database and PINGs, so a port where something other than Redis listens is
/// detected at once. Every command is binary-safe (arguments are sent as length-prefixed
/// bulk strings, never spliced into text) and bounded by a deadline. A connection whose
/// command failed mid-flight (I/O error, timeout, protocol error) is *poisoned*: its stream
/// position is unknown, so it refuses further commands and a pool discards it.
///
/// Thread-safety: none; use one connection from one thread at a time (pools hand out
/// exclusive leases).
class connection {
public:
    /// Connects to `ep` (which must not be a Sentinel endpoint; see sentinel.hpp).
    /// @throws invalid_argument for a Sentinel endpoint;
    /// @throws connection_error when the server cannot be reached;
    /// @throws auth_error when the password or user is refused;
    /// @throws timeout_error when the handshake does not finish within connect_timeout;
    /// @throws protocol_error when the peer does not speak RESP.
    explicit connection(const endpoint& ep);
    connection(connection&&) noexcept;
    connection& operator=(connection&&) noexcept;
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;
    ~connection();

    /// Sends one command and waits for its reply, up to `endpoint::command_timeout`.
    /// @throws reply_error when the server answers with an error (its text in what());
    /// @throws timeout_error, connection_error, protocol_error on transport failures, after
    ///         which the connection is poisoned.
    reply command(std::span<const std::string_view> argv);
    /// Same, for a literal argument list: `c.command({"SET", key, value})`.
    reply command(std::initializer_list<std::string_view> argv);
    /// Same, for owned arguments.
    reply command(const std::vector<std::string>& argv);
    /// Same, with an explicit reply deadline (for blocking commands such as BLMOVE whose
    /// server-side timeout exceeds the default). Zero waits forever.
    reply command_for(std::chrono::milliseconds timeout, std::span<const std::string_view> argv);

    /// Sends several commands in one write and reads all replies in order (pipelining).
    /// Error replies are returned as values (reply::is_error()), not thrown.
    /// @throws timeout_error, connection_error, protocol_error as command().
    std::vector<reply> pipeline(const std::vector<std::vector<std::string>>& commands);

    /// True once a transport failure left the stream in an unknown state.
    [[nodiscard]] bool poisoned() const noexcept;
    /// Marks the connection unusable (e.g. a reply is still outstanding after a deadline).
    void poison() noexcept;
    /// The endpoint this connection was opened to.
    [[nodiscard]] const endpoint& where() const noexcept;
    /// When the last command completed (steady clock); used by pools for idle checks.
    [[nodiscard]] std::chrono::steady_clock::time_point last_used() const noexcept;

    /// Opaque state, defined privately in core.
    struct impl;

private:
    friend struct detail::connection_access;
    explicit connection(std::unique_ptr<impl> i) noexcept;
    std::unique_ptr<impl> impl_;
};

}  // namespace redcoord
