#pragma once
/// @file
/// Where a Redis server is and how to talk to it, and the URI syntax that names it.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace redcoord {

/// A host and TCP port (used for Sentinel addresses and replica lists).
struct host_port {
    std::string host;          ///< Host name or IP literal (IPv6 without brackets).
    std::uint16_t port = 0;    ///< TCP port.
    friend bool operator==(const host_port&, const host_port&) = default;
};

/// How to reach one Redis server (or, with `sentinels` set, a Sentinel-monitored service).
///
/// Thread-safety: a plain value type.
struct endpoint {
    std::string host = "127.0.0.1";   ///< TCP host; ignored when `unix_path` is set.
    std::uint16_t port = 6379;        ///< TCP port.
    std::string unix_path;            ///< Unix socket path; empty means TCP.
    std::string user;                 ///< ACL user name; empty means the default user.
    std::string password;             ///< Password; empty means no AUTH. Never printed.
    int db = 0;                       ///< Database selected after connecting (SELECT); 0 sends none.
    /// Connect deadline: the TCP connect, then each blocking read of the AUTH/SELECT/PING
    /// handshake (DNS is not bounded; see connection.hpp for the exact bounds). Must be > 0.
    std::chrono::milliseconds connect_timeout{1000};
    /// Deadline for one command's reply, applied to each blocking socket send/receive (see
    /// connection.hpp); zero means wait forever (not recommended).
    std::chrono::milliseconds command_timeout{2000};
    bool keepalive = true;            ///< Enable TCP keepalive on the socket.

    /// Sentinel addresses; non-empty means "ask these sentinels for `service`'s master".
    std::vector<host_port> sentinels;
    std::string service;              ///< Sentinel service (master) name.
    std::string sentinel_password;    ///< Password for the sentinels themselves; empty means none.

    /// True when this endpoint names a Sentinel service rather than one server.
    [[nodiscard]] bool is_sentinel() const noexcept { return !sentinels.empty(); }

    /// A printable description with the password redacted, e.g. `redis://127.0.0.1:6379/0`.
    [[nodiscard]] std::string to_string() const;

    /// The same endpoint with host/port replaced (used when Sentinel resolves a service).
    [[nodiscard]] endpoint with_address(const host_port& hp) const;
};

/// Parses a redcoord URI into an endpoint.
///
/// Accepted forms:
/// - `redis://[[user]:password@]host[:port][/db]` (IPv6 hosts in brackets), default port 6379;
/// - `unix:///path/to.sock[?db=N]`;
/// - `redis-sentinel://[[user]:password@]h1[:p1],h2[:p2]/service[/db]`, default port 26379.
/// User and password may be percent-encoded. The user information ends at the last `@`, so
/// a password pasted without encoding may hold `/`, `@` and `:` (the user name ends at the
/// first `:`).
/// @throws invalid_argument for anything else. The message names the faulty part but quotes
///         no text of the URI, so no fragment of a password can appear in it.
/// Thread-safety: a pure function.
[[nodiscard]] endpoint parse_endpoint(std::string_view uri);

}  // namespace redcoord
