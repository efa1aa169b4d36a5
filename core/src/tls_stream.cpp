#include "tls_stream.hpp"

#include "tls_context.hpp"

#include <redcoord/core/errors.hpp>

#include <openssl/err.h>

#include <poll.h>

#include <cerrno>
#include <system_error>

namespace redcoord::detail {

namespace {

// poll() for `events` on `fd` until `timeout` has passed; false then.
bool wait_socket(int fd, short events, std::chrono::milliseconds timeout) {
    using clock = std::chrono::steady_clock;
    const auto until = clock::now() + timeout;
    for (;;) {
        const auto left =
            std::chrono::ceil<std::chrono::milliseconds>(until - clock::now()).count();
        if (left <= 0) return false;
        pollfd p{fd, events, 0};
        const int rc = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1 << 30)));
        if (rc > 0) return true;  // ready, or an error/hang-up the next read or write reports
        if (rc < 0 && errno != EINTR) return true;
    }
}

}  // namespace

struct tls_stream::session {
    std::shared_ptr<SSL_CTX> ctx;  // outlives the SSL made from it
    socket_io io;                  // the BIO's
    SSL* ssl = nullptr;
    ~session() {
        if (ssl) SSL_free(ssl);
    }

    result outcome(int rc) {
        const int err = SSL_get_error(ssl, rc);
        result r;
        switch (err) {
            case SSL_ERROR_NONE: r.bytes = static_cast<std::size_t>(rc); return r;
            case SSL_ERROR_WANT_READ: r.state = status::want_read; return r;
            case SSL_ERROR_WANT_WRITE: r.state = status::want_write; return r;
            case SSL_ERROR_ZERO_RETURN: r.state = status::closed; return r;
            case SSL_ERROR_SYSCALL:
                if (ERR_peek_error() == 0) {
                    const int e = errno;
                    ERR_clear_error();
                    if (e == 0 || e == ECONNRESET || e == EPIPE) {
                        r.state = status::closed;  // EOF without close_notify: Redis just closes
                        return r;
                    }
                    r.state = status::failed;
                    r.sys_errno = e;
                    r.reason = std::generic_category().message(e);
                    return r;
                }
                [[fallthrough]];
            default:
                r.state = status::failed;
                r.reason = take_tls_reason("TLS failure");
                return r;
        }
    }
};

tls_stream::tls_stream(int fd, const tls_options& opts, const std::string& host,
                       const std::string& where, std::chrono::steady_clock::time_point deadline)
    : s_(std::make_unique<session>()) {
    s_->ctx = tls_context_for(opts);
    ERR_clear_error();
    s_->ssl = SSL_new(s_->ctx.get());
    s_->io.fd = fd;
    BIO* bio = s_->ssl ? nosignal_socket_bio(&s_->io) : nullptr;
    if (!bio) throw tls_error("TLS with " + where + ": out of memory");
    SSL_set_bio(s_->ssl, bio, bio);
    prepare_client_session(s_->ssl, opts, host, where);
    // Without blocking, so that the handshake keeps the connect deadline exactly.
    for (;;) {
        const result r = s_->outcome(SSL_connect(s_->ssl));
        if (r.state == status::done) return;
        if (r.state == status::want_read || r.state == status::want_write) {
            const auto left = std::chrono::ceil<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0 ||
                !wait_socket(fd, r.state == status::want_read ? POLLIN : POLLOUT, left))
                throw timeout_error("TLS handshake with " + where +
                                    ": timed out (is the port a plaintext one? then use redis://)");
            continue;
        }
        const std::string message =
            handshake_failure(s_->ssl, where, r.state == status::closed, r.reason);
        throw tls_error(message);
    }
}

tls_stream::~tls_stream() = default;

tls_stream::result tls_stream::read(char* buf, std::size_t size, bool may_block) {
    s_->io.may_block = may_block;
    ERR_clear_error();
    errno = 0;
    return s_->outcome(SSL_read(s_->ssl, buf, static_cast<int>(size)));
}

tls_stream::result tls_stream::write(const char* buf, std::size_t size, bool may_block) {
    s_->io.may_block = may_block;
    ERR_clear_error();
    errno = 0;
    return s_->outcome(SSL_write(s_->ssl, buf, static_cast<int>(size)));
}

bool tls_stream::has_pending() const noexcept { return SSL_has_pending(s_->ssl) == 1; }

std::string tls_stream::alert_before_close() {
    char scratch[4096];
    for (int i = 0; i < 8; ++i) {
        const result r = read(scratch, sizeof scratch, false);
        if (r.state == status::failed && !r.sys_errno) return r.reason;
        if (r.state != status::done) return {};
    }
    return {};
}

}  // namespace redcoord::detail
