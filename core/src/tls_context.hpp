#pragma once
// Private to core: the OpenSSL client contexts of the process, one per distinct set of TLS
// options (loading a CA bundle costs milliseconds; a reconnect must not pay it again).

#include <redcoord/core/endpoint.hpp>

#include <openssl/ssl.h>

#include <memory>

namespace redcoord::detail {

// The context for `opts`, made on first use and shared by every connection that uses the
// same options. @throws tls_error when a CA, certificate or key file cannot be loaded.
std::shared_ptr<SSL_CTX> tls_context_for(const tls_options& opts);

// The socket under a TLS session, and whether its next read or write may block (the socket
// stays in blocking mode, bounded by SO_RCVTIMEO / SO_SNDTIMEO like a plaintext link: a reply
// then costs one recv(), with no poll() first; poll-driven readers pass MSG_DONTWAIT).
struct socket_io {
    int fd = -1;
    bool may_block = false;
};

// A BIO on `io` (which must outlive it) whose writes never raise SIGPIPE (send with
// MSG_NOSIGNAL): a library must not kill its host process when a server resets the link.
// Null when out of memory.
BIO* nosignal_socket_bio(socket_io* io);

// OpenSSL's reason for the failure at the head of this thread's error queue (emptied),
// or `fallback` when the queue is empty.
std::string take_tls_reason(const char* fallback);

// Readies a client session before its handshake: SNI with the name expected (`opts`'s
// server_name, else `host`; DNS names only, RFC 6066 §3), and with verify_peer the name the
// certificate must carry (DNS name or IP address). Shared by the blocking connections'
// tls_stream and the event loop's links. @throws tls_error when the name cannot be set
// (`where` names the server).
void prepare_client_session(SSL* ssl, const tls_options& opts, const std::string& host,
                            const std::string& where);

// The tls_error text of a failed client handshake with `where`: the certificate check's
// verdict when it failed, else what ended it (`closed`: the server hung up; else `reason`,
// OpenSSL's), with a hint when the port looks like a plaintext one.
std::string handshake_failure(SSL* ssl, const std::string& where, bool closed,
                              const std::string& reason);

}  // namespace redcoord::detail
