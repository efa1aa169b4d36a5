#pragma once
// Private to core: TLS over a socket that hiredis connected, for connection::impl. hiredis
// 0.14 has no TLS, so it stays the RESP reader and command formatter while the bytes go
// through OpenSSL here.

#include <redcoord/core/endpoint.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

namespace redcoord::detail {

// One TLS session on a connected socket, which stays in blocking mode: a read or write that
// may block waits up to the socket's SO_RCVTIMEO / SO_SNDTIMEO (then want_read / want_write
// means timed out), one that may not returns at once (MSG_DONTWAIT).
//
// Thread-safety: none; used under the owning connection's rules.
class tls_stream {
public:
    enum class status {
        done,        // `bytes` moved
        want_read,   // nothing now: retry when the socket is readable
        want_write,  // nothing now: retry when the socket is writable
        closed,      // the peer closed the connection
        failed,      // TLS or socket failure: see `reason`
    };
    struct result {
        status state = status::done;
        std::size_t bytes = 0;
        std::string reason;  // for `failed`: OpenSSL's reason, or the socket error
        int sys_errno = 0;   // for `failed` by the socket
    };

    // Runs the client handshake on `fd` by `deadline`, checking the server's certificate
    // against `opts` and the name `host` (or opts.server_name). `where` names the server in
    // messages.
    // @throws tls_error when the handshake fails or a certificate or key file cannot be
    //         loaded; timeout_error when the deadline passes.
    tls_stream(int fd, const tls_options& opts, const std::string& host, const std::string& where,
               std::chrono::steady_clock::time_point deadline);
    ~tls_stream();
    tls_stream(const tls_stream&) = delete;
    tls_stream& operator=(const tls_stream&) = delete;

    [[nodiscard]] result read(char* buf, std::size_t size, bool may_block);
    [[nodiscard]] result write(const char* buf, std::size_t size, bool may_block);
    // True when the session holds bytes read from the socket and not yet returned by read()
    // (poll() cannot see them).
    [[nodiscard]] bool has_pending() const noexcept;
    // After a write found the link closed: the TLS alert the server sent before closing (e.g.
    // "tlsv13 alert certificate required", which TLS 1.3 delivers after the handshake), or
    // empty. Consumes what is left to read; the link is unusable anyway.
    [[nodiscard]] std::string alert_before_close();

private:
    struct session;
    std::unique_ptr<session> s_;
};

}  // namespace redcoord::detail
