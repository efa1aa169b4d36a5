#pragma once
/// @file
/// Where a Redis server is and how to talk to it, and the URI syntax that names it.

#include <redcoord/core/export.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord {

/// A host and TCP port (used for Sentinel addresses and replica lists).
struct host_port {
    std::string host;        ///< Host name or IP literal (IPv6 without brackets).
    std::uint16_t port = 0;  ///< TCP port.
    friend bool operator==(const host_port&, const host_port&) = default;
};

/// The oldest TLS protocol version a connection accepts.
enum class tls_version {
    v1_2,  ///< TLS 1.2 (RFC 5246) and newer.
    v1_3,  ///< TLS 1.3 (RFC 8446) only.
};

/// TLS settings of an endpoint (Redis TLS: https://redis.io/docs/management/security/encryption/).
///
/// Every connection of the endpoint uses them: pooled command connections, pub/sub links, the
/// Redlock fan-out and, for a Sentinel endpoint, the sentinels and the masters and replicas
/// they name. File paths are read when a connection is first made (and again after they change
/// on disk only when the process makes a new context; see connection.hpp).
///
/// Thread-safety: a plain value type.
struct tls_options {
    bool enabled = false;  ///< Speak TLS (a `rediss://` URI, or `?tls=true`).
    /// PEM file of trusted CA certificates. With `ca_dir` also empty, the system's store.
    std::string ca_file;
    /// Directory of trusted CA certificates in OpenSSL's hashed form (`openssl rehash`).
    std::string ca_dir;
    /// Check the server's certificate chain and its name. Off only when asked; a process
    /// that turns it off is told once on standard error, as it gives up TLS's protection
    /// against a man in the middle.
    bool verify_peer = true;
    /// The name sent by SNI and checked against the certificate (DNS name or IP address);
    /// empty: the host connected to.
    std::string server_name;
    std::string cert_file;  ///< Client certificate (PEM) for mutual TLS; empty: none.
    std::string key_file;   ///< Its private key (PEM); empty with `cert_file` set: in `cert_file`.
    tls_version min_version = tls_version::v1_2;  ///< Oldest protocol version accepted.
    friend bool operator==(const tls_options&, const tls_options&) = default;
};

/// How to reach one Redis server (or, with `sentinels` set, a Sentinel-monitored service).
///
/// Thread-safety: a plain value type.
struct endpoint {
    std::string host = "127.0.0.1";  ///< TCP host; ignored when `unix_path` is set.
    std::uint16_t port = 6379;       ///< TCP port.
    std::string unix_path;           ///< Unix socket path; empty means TCP.
    std::string user;                ///< ACL user name; empty means the default user.
    std::string password;            ///< Password; empty means no AUTH. Never printed.
    int db = 0;                      ///< Database selected after connecting (SELECT); 0 sends none.
    /// Connect deadline: the TCP connect, then each blocking read of the AUTH/SELECT/PING
    /// handshake (DNS is not bounded; see connection.hpp for the exact bounds). Must be > 0.
    std::chrono::milliseconds connect_timeout{1000};
    /// Deadline for one command's reply, applied to each blocking socket send/receive (see
    /// connection.hpp); zero means wait forever (not recommended).
    std::chrono::milliseconds command_timeout{2000};
    bool keepalive = true;  ///< Enable TCP keepalive on the socket.

    /// Sentinel addresses; non-empty means "ask these sentinels for `service`'s master".
    std::vector<host_port> sentinels;
    std::string service;        ///< Sentinel service (master) name.
    std::string sentinel_user;  ///< ACL user for the sentinels themselves; empty: the default user.
    /// Password for the sentinels themselves; empty means none. Never printed.
    std::string sentinel_password;
    /// TLS for every connection of this endpoint (for Sentinel: to the sentinels and to the
    /// servers they name; for Cluster: to every node).
    tls_options tls;

    /// Redis Cluster seed nodes; non-empty means "a cluster: route each key to the master of
    /// its hash slot" (see cluster.hpp). Any reachable node serves to learn the slot map.
    std::vector<host_port> cluster_nodes;

    /// True when this endpoint names a Redis Cluster rather than one server.
    [[nodiscard]] bool is_cluster() const noexcept { return !cluster_nodes.empty(); }

    /// True when this endpoint names a Sentinel service rather than one server.
    [[nodiscard]] bool is_sentinel() const noexcept { return !sentinels.empty(); }

    /// A printable description with the passwords redacted, for example `redis://127.0.0.1:6379/0`;
    /// options that differ from the defaults are printed as the URI query that parse_endpoint
    /// reads back.
    [[nodiscard]] std::string to_string() const;

    /// The same endpoint with host/port replaced (used when Sentinel resolves a service or a
    /// cluster routes to a node): the sentinels and the cluster seeds are dropped.
    [[nodiscard]] endpoint with_address(const host_port& hp) const;
};

/// Parses a redcoord URI into an endpoint.
///
/// Accepted forms:
/// - `redis://[[user]:password@]host[:port][/db][?options]` (IPv6 hosts in brackets), default
///   port 6379; `rediss://` is the same over TLS;
/// - `unix:///path/to.sock[?options]`;
/// - `redis-sentinel://[[user]:password@]h1[:p1],h2[:p2]/service[/db][?options]`, default port
///   26379 (`?tls=true` for TLS to the sentinels and to the servers they name);
/// - `redis-cluster://[[user]:password@]h1[:p1],h2[:p2][/0][?options]`, Redis Cluster seed
///   nodes, default port 6379 (`rediss-cluster://` or `?tls=true` for TLS to every node); a
///   cluster has only database 0, so any other database is refused.
///
/// Options, `name=value` joined by `&`, values percent-encoded where needed:
/// `db` (0..1000000), `connect_timeout` and `command_timeout` (durations as parse_duration reads
/// them: `500ms`, `2s`), `keepalive` (`true`/`false`), `tls`, `ca_file`, `ca_dir`,
/// `verify_peer`, `server_name`, `cert_file`, `key_file`, `min_tls_version` (`1.2` or `1.3`),
/// and for Sentinel `sentinel_user` and `sentinel_password`. TLS options are refused on
/// `unix://` and on a plaintext `redis://` without `tls=true`.
///
/// User and password may be percent-encoded. The user information ends at the last `@`, so
/// a password pasted without encoding may hold `/`, `?`, `@` and `:` (the user name ends at
/// the first `:`); an `@` in an option value must therefore be written `%40` (a query whose
/// raw `@` would be read as the end of the password is refused).
/// @throws invalid_argument for anything else. The message names the faulty part but quotes
///         no text of the URI, so no fragment of a password can appear in it; the one
///         exception is an unknown option's key made only of lowercase letters and `_`, the
///         shape of every option name (any other key is named by its position).
/// Thread-safety: a pure function.
[[nodiscard]] endpoint parse_endpoint(std::string_view uri);

}  // namespace redcoord

REDCOORD_API_END
