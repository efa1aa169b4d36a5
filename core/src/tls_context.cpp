#include "tls_context.hpp"

#include "openssl_init.hpp"

#include <redcoord/core/errors.hpp>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>

#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

namespace redcoord::detail {

std::string take_tls_reason(const char* fallback) {
    const unsigned long e = ERR_get_error();
    ERR_clear_error();
    if (e == 0) return fallback;
    if (const char* r = ERR_reason_error_string(e)) return r;
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    return buf;
}

namespace {

bool is_ip_literal(const std::string& name) {
    unsigned char buf[sizeof(in6_addr)];
    return inet_pton(AF_INET, name.c_str(), buf) == 1 ||
           inet_pton(AF_INET6, name.c_str(), buf) == 1;
}

}  // namespace

void prepare_client_session(SSL* ssl, const tls_options& opts, const std::string& host,
                            const std::string& where) {
    const std::string& name = opts.server_name.empty() ? host : opts.server_name;
    if (!is_ip_literal(name) && !name.empty()) SSL_set_tlsext_host_name(ssl, name.c_str());
    if (opts.verify_peer && !name.empty()) {
        X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
        const int ok = is_ip_literal(name)
                           ? X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str())
                           : X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
        if (ok != 1)
            throw tls_error("TLS with " + where + ": cannot check the server name '" + name + "'");
    }
}

std::string handshake_failure(SSL* ssl, const std::string& where, bool closed,
                              const std::string& reason) {
    std::string why;
    if (const long v = SSL_get_verify_result(ssl); v != X509_V_OK)
        why = std::string("certificate verify failed: ") + X509_verify_cert_error_string(v);
    else if (closed)
        why =
            "the server closed the connection (a plaintext port, or a client certificate it "
            "wants?)";
    else
        why = reason;
    if (why.find("wrong version number") != std::string::npos ||
        why.find("packet length too long") != std::string::npos)
        why += " (is the port a plaintext one? then use redis://)";
    std::string message = "TLS handshake with ";
    message.append(where).append(" failed: ").append(why);
    return message;
}

namespace {

using context_key = std::tuple<std::string, std::string, bool, std::string, std::string, int>;

context_key key_of(const tls_options& o) {
    return {o.ca_file,   o.ca_dir,   o.verify_peer,
            o.cert_file, o.key_file, static_cast<int>(o.min_version)};
}

[[noreturn]] void context_failed(const std::string& what) {
    throw tls_error("TLS: " + what + ": " + take_tls_reason("unknown OpenSSL failure"));
}

std::shared_ptr<SSL_CTX> make_context(const tls_options& o) {
    std::shared_ptr<SSL_CTX> ctx(SSL_CTX_new(TLS_client_method()), SSL_CTX_free);
    if (!ctx) context_failed("cannot create a context");
    SSL_CTX_set_min_proto_version(
        ctx.get(), o.min_version == tls_version::v1_3 ? TLS1_3_VERSION : TLS1_2_VERSION);
    // Writes come from hiredis's output buffer, which moves as it is consumed.
    SSL_CTX_set_mode(ctx.get(),
                     SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    // A record's header and body in one recv(), and whatever else has arrived: a reply costs
    // one system call, as on a plaintext link (readers check has_pending() before polling).
    SSL_CTX_set_read_ahead(ctx.get(), 1);
    if (!o.ca_file.empty() || !o.ca_dir.empty()) {
        if (SSL_CTX_load_verify_locations(ctx.get(),
                                          o.ca_file.empty() ? nullptr : o.ca_file.c_str(),
                                          o.ca_dir.empty() ? nullptr : o.ca_dir.c_str()) != 1)
            context_failed("cannot load the CA certificates (ca_file '" + o.ca_file +
                           "', ca_dir '" + o.ca_dir + "')");
    } else if (SSL_CTX_set_default_verify_paths(ctx.get()) != 1) {
        context_failed("cannot load the system's CA certificates");
    }
    if (!o.cert_file.empty()) {
        if (SSL_CTX_use_certificate_chain_file(ctx.get(), o.cert_file.c_str()) != 1)
            context_failed("cannot load the client certificate '" + o.cert_file + "'");
        const std::string& key = o.key_file.empty() ? o.cert_file : o.key_file;
        if (SSL_CTX_use_PrivateKey_file(ctx.get(), key.c_str(), SSL_FILETYPE_PEM) != 1)
            context_failed("cannot load the client key '" + key + "'");
        if (SSL_CTX_check_private_key(ctx.get()) != 1)
            context_failed("the client key '" + key + "' does not match the certificate '" +
                           o.cert_file + "'");
    } else if (!o.key_file.empty()) {
        throw tls_error("TLS: key_file without cert_file");
    }
    SSL_CTX_set_verify(ctx.get(), o.verify_peer ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nullptr);
    return ctx;
}

// ---- a socket BIO whose writes use MSG_NOSIGNAL ----

const socket_io& io_of(BIO* b) { return *static_cast<const socket_io*>(BIO_get_data(b)); }
int flags_of(const socket_io& io) { return io.may_block ? 0 : MSG_DONTWAIT; }

bool transient(int e) { return e == EAGAIN || e == EWOULDBLOCK || e == EINTR; }

int bio_write(BIO* b, const char* data, int len) {
    BIO_clear_retry_flags(b);
    const auto& io = io_of(b);
    const ssize_t n =
        ::send(io.fd, data, static_cast<std::size_t>(len), MSG_NOSIGNAL | flags_of(io));
    if (n < 0 && transient(errno)) BIO_set_retry_write(b);
    return static_cast<int>(n);
}

int bio_read(BIO* b, char* data, int len) {
    BIO_clear_retry_flags(b);
    const auto& io = io_of(b);
    const ssize_t n = ::recv(io.fd, data, static_cast<std::size_t>(len), flags_of(io));
    if (n < 0 && transient(errno)) BIO_set_retry_read(b);
    return static_cast<int>(n);
}

long bio_ctrl(BIO*, int cmd, long, void*) {
    // Flushing is a no-op (nothing is buffered here); push and pop must succeed.
    return cmd == BIO_CTRL_FLUSH || cmd == BIO_CTRL_PUSH || cmd == BIO_CTRL_POP ? 1 : 0;
}

int bio_create(BIO* b) {
    BIO_set_init(b, 1);
    return 1;
}

const BIO_METHOD* nosignal_method() {
    static BIO_METHOD* const method = [] {
        BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "redcoord socket");
        if (!m) return m;
        BIO_meth_set_write(m, bio_write);
        BIO_meth_set_read(m, bio_read);
        BIO_meth_set_ctrl(m, bio_ctrl);
        BIO_meth_set_create(m, bio_create);
        return m;
    }();
    return method;
}

}  // namespace

BIO* nosignal_socket_bio(socket_io* io) {
    const BIO_METHOD* m = nosignal_method();
    if (!m) return nullptr;
    BIO* b = BIO_new(m);
    if (b) BIO_set_data(b, io);
    return b;
}

std::shared_ptr<SSL_CTX> tls_context_for(const tls_options& opts) {
    init_openssl();
    // Never destroyed: a dialer thread may still connect while the process exits.
    static auto* const mu = new std::mutex;
    static auto* const contexts = new std::map<context_key, std::weak_ptr<SSL_CTX>>;
    if (!opts.verify_peer) {
        static std::once_flag told;
        std::call_once(told, [] {
            std::fprintf(
                stderr,
                "redcoord: TLS peer verification is off (verify_peer=false): connections are not "
                "protected against a man in the middle\n");
        });
    }
    std::lock_guard lk(*mu);
    std::erase_if(*contexts, [](auto& e) { return e.second.expired(); });
    auto& slot = (*contexts)[key_of(opts)];
    if (auto c = slot.lock()) return c;
    auto c = make_context(opts);
    slot = c;
    return c;
}

}  // namespace redcoord::detail
