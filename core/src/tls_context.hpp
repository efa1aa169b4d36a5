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

}  // namespace redcoord::detail
