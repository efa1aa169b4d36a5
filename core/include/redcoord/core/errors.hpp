#pragma once
/// @file
/// The typed errors every redcoord part throws. Expected outcomes ("not acquired", "queue
/// empty", "timed out waiting") are return values, never exceptions; these are for I/O,
/// protocol, server and usage failures.

#include <redcoord/core/export.hpp>

#include <stdexcept>
#include <string>
#include <utility>

REDCOORD_API_BEGIN
namespace redcoord {

/// Base of every error redcoord throws. Messages never contain a password.
class error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// The server could not be reached, refused the connection, or the link broke mid-command.
class connection_error : public error {
public:
    using error::error;
};

/// Authentication was refused (wrong user or password, or the server wants one).
class auth_error : public connection_error {
public:
    using connection_error::connection_error;
};

/// A Redis Cluster could not serve the call: it answered `CLUSTERDOWN` (slots not covered,
/// or no majority of masters) or `TRYAGAIN` (a multi-key call during a slot migration) for
/// longer than the call's deadline, or no node could tell the slot map. A connection_error,
/// so code that retries broken links (primitives riding out a failover) retries this alike;
/// what() quotes the cluster's last answer.
class cluster_unavailable : public connection_error {
public:
    using connection_error::connection_error;
};

/// A TLS failure: the handshake failed (certificate not trusted, expired or for another name,
/// no client certificate where the server requires one, a plaintext server, no common
/// protocol version), a certificate or key file could not be loaded, or the TLS layer failed
/// later on the link. what() holds OpenSSL's reason (for example "certificate has expired").
/// A connection_error, so code that retries broken links treats it alike; a handshake that
/// failed for a certificate fails again on retry.
class tls_error : public connection_error {
public:
    using connection_error::connection_error;
};

/// A connect, command or borrow deadline passed before the server answered.
class timeout_error : public error {
public:
    using error::error;
};

/// The server answered with an error reply; what() holds the server's text.
class reply_error : public error {
public:
    using error::error;
};

/// The server refused a command for lack of ACL permissions (a `NOPERM` reply, or a command,
/// key or channel refused inside a script): the connected user is missing a command, key
/// pattern or channel pattern that redcoord needs (see redcoord/core/acl.hpp and the part's
/// `acl_needs`). what() names the command and quotes the server's text; it is a reply_error,
/// so code that catches reply_error catches it too. Never retried: the answer stays the same
/// until an administrator changes the user.
class permission_error : public reply_error {
public:
    /// @param command the refused command in lower case (`evalsha`, `client|setname`), as the
    ///        server named it or, when it did not, as redcoord sent it.
    /// @param message the full text for what().
    permission_error(std::string command, const std::string& message)
        : reply_error(message), command_(std::move(command)) {}
    /// The refused command, lower case (for example `subscribe`, `evalsha`, `blmove`).
    [[nodiscard]] const std::string& command() const noexcept { return command_; }

private:
    std::string command_;
};

/// The peer sent something that is not RESP (for example: not a Redis server), or a
/// reply of an unexpected shape.
class protocol_error : public error {
public:
    using error::error;
};

/// No connection could be borrowed from a connection_pool within the borrow timeout.
class pool_exhausted : public error {
public:
    using error::error;
};

/// A caller mistake, as opposed to a failure of the server, the network or the protocol: a
/// value redcoord cannot use (invalid_argument, payload_too_large) or a call the object's state
/// does not allow (locking a non-recursive lock again from the thread that holds it, releasing
/// what is not held). Retrying the same call cannot succeed; fix the calling code. Thrown
/// before anything is sent, so connections and server state are untouched. The CLI maps the
/// whole family to its usage exit status (2).
class usage_error : public error {
public:
    using error::error;
};

/// A caller passed a value redcoord cannot use (empty name, bad URL, bad option): a
/// usage_error; what() names the offending value or option field and the rule it breaks.
class invalid_argument : public usage_error {
public:
    using usage_error::usage_error;
};

/// A payload longer than the limit of the primitive it was given to (a queue's or a signal hub's
/// `max_payload`, a job's 512 MiB). Thrown before any byte is sent, so the connection (and
/// everything pooled behind it) is untouched; what() gives the size and the limit.
class payload_too_large : public invalid_argument {
public:
    using invalid_argument::invalid_argument;
};

/// A write (unlock, ack, extend, ...) was sent but its reply was lost: the effect may or
/// may not have happened on the server.
class outcome_unknown : public error {
public:
    using error::error;
};

}  // namespace redcoord

REDCOORD_API_END
