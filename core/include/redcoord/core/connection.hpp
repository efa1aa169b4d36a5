#pragma once
/// @file
/// One blocking connection to one Redis server, over hiredis (which stays private to core).

#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/core/reply.hpp>

#include <chrono>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord {

namespace detail {
struct connection_access;
}

/// A move-only RAII connection to one Redis server.
///
/// Opening connects with `endpoint::connect_timeout`, authenticates (AUTH [user] password),
/// selects the database and PINGs, so a port where something other than Redis listens is
/// detected at once. Every command is binary-safe (arguments are sent as length-prefixed
/// bulk strings, never spliced into text) and bounded by a deadline (see below). A connection
/// whose command failed mid-flight (I/O error, timeout, protocol error) is *poisoned*: its
/// stream position is unknown, so it refuses further commands and a pool discards it.
///
/// What the timeouts bound, precisely:
/// - DNS resolution of `endpoint::host` (getaddrinfo) is not bounded; use an IP literal where
///   that matters.
/// - The TCP connect is bounded by connect_timeout. Each handshake reply (AUTH, SELECT, PING)
///   is then read with connect_timeout as a per-socket-operation limit, so the handshake as a
///   whole can take up to connect_timeout for the TCP connect plus connect_timeout per
///   blocking read (normally one: the replies arrive together).
/// - A command's timeout (command_timeout, or command_for's argument) applies to each
///   blocking send() and recv() of the socket (SO_SNDTIMEO / SO_RCVTIMEO), not to the command
///   as a whole: a peer that trickles a large reply a little at a time is not cut off. For a
///   normal server a reply arrives in one or a few reads, so the bound is effectively the
///   timeout. The fan-out (fan_out.hpp) enforces one absolute deadline with poll() instead.
///
/// @par Thread safety
/// None; use one connection from one thread at a time (pools hand out
/// exclusive leases).
///
/// @par Errors
/// The constructor throws invalid_argument, connection_error, auth_error, tls_error, timeout_error,
/// reply_error or protocol_error (see there); command() throws reply_error for an error reply (the
/// connection stays usable) and timeout_error, connection_error or protocol_error for a transport
/// failure (the connection is then poisoned); pipeline() returns error replies as values.
///
/// @par Cost
/// Opening: a TCP connect (and a TLS handshake for `rediss://`), then AUTH/SELECT/PING written
/// together and read in one round trip. command(): one send and one receive, one round trip;
/// pipeline(): one write and one round trip for all its commands.
class connection {
public:
    /// Connects to `ep` (which must not be a Sentinel endpoint; see sentinel.hpp).
    /// @throws invalid_argument for a Sentinel endpoint;
    /// @throws connection_error when the server cannot be reached, or refuses the handshake
    ///         for a transient reason (`-LOADING`, `-BUSY`, `-MASTERDOWN`, `-TRYAGAIN`):
    ///         retrying later can succeed;
    /// @throws auth_error when the password or user is refused;
    /// @throws reply_error when the server refuses the handshake for good (for example SELECT of a
    ///         database it does not have);
    /// @throws timeout_error when the handshake does not finish within connect_timeout;
    /// @throws protocol_error when the peer does not speak RESP.
    explicit connection(const endpoint& ep);
    /// Takes over the other connection's socket; the other is left closed.
    connection(connection&&) noexcept;
    /// Closes this connection's socket and takes over the other's; the other is left closed.
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
    /// @throws invalid_argument when a command is empty; nothing is sent then and the
    ///         connection stays usable;
    /// @throws timeout_error, connection_error, protocol_error as command().
    std::vector<reply> pipeline(const std::vector<std::vector<std::string>>& commands);

    /// True once a transport failure left the stream in an unknown state.
    [[nodiscard]] bool poisoned() const noexcept;
    /// Marks the connection unusable (for example a reply is still outstanding after a deadline).
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

REDCOORD_API_END
