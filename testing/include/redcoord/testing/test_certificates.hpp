#pragma once
/// @file
/// Certificates for TLS tests, made by the `openssl` command in a temporary directory:
/// a CA, a server certificate for 127.0.0.1 and localhost, a client certificate, and the bad
/// ones each TLS failure test needs.

#include <redcoord/core/export.hpp>

#include <filesystem>

REDCOORD_API_BEGIN
namespace redcoord::testing {

/// A certificate (PEM) and its private key (PEM, unencrypted, EC P-256).
struct cert_pair {
    std::filesystem::path cert;  ///< The certificate's PEM file.
    std::filesystem::path key;   ///< The private key's PEM file.
};

/// A fresh set of test certificates; the directory is removed on destruction.
///
/// @par Thread safety
/// None after construction; the paths may be read from any thread.
///
/// @par Errors
/// The constructor throws redcoord::error when `openssl` is missing or one of its commands fails;
/// the destructor never throws.
///
/// @par Cost
/// Runs the `openssl` command a few times (EC P-256 keys and certificates) in a temporary
/// directory; nothing is sent to Redis.
class test_certificates {
public:
    /// Generates every certificate (about 0.1 s).
    /// @throws redcoord::error when `openssl` is missing or one of its commands fails (the
    ///         message names the command and points to its log).
    test_certificates();
    ~test_certificates();
    test_certificates(const test_certificates&) = delete;
    test_certificates& operator=(const test_certificates&) = delete;

    /// The test CA's certificate: the trust anchor of every pair below except `foreign`.
    [[nodiscard]] const std::filesystem::path& ca() const noexcept { return ca_.cert; }
    /// A directory holding only the CA certificate in OpenSSL's hashed form (`ca_dir`).
    [[nodiscard]] const std::filesystem::path& ca_dir() const noexcept { return ca_dir_; }
    /// Server certificate for `localhost` and `127.0.0.1`, signed by the CA.
    [[nodiscard]] const cert_pair& server() const noexcept { return server_; }
    /// Client certificate (CN `redcoord-client`, client auth), signed by the CA.
    [[nodiscard]] const cert_pair& client() const noexcept { return client_; }
    /// Server certificate for 127.0.0.1 that expired in 2020.
    [[nodiscard]] const cert_pair& expired() const noexcept { return expired_; }
    /// Server certificate signed by the CA, but for `other.example` only.
    [[nodiscard]] const cert_pair& wrong_host() const noexcept { return wrong_host_; }
    /// A self-signed CA the servers do not use: trusting it instead of ca() must fail.
    [[nodiscard]] const std::filesystem::path& foreign_ca() const noexcept { return foreign_.cert; }

private:
    std::filesystem::path dir_, ca_dir_;
    cert_pair ca_, server_, client_, expired_, wrong_host_, foreign_;
};

}  // namespace redcoord::testing

REDCOORD_API_END
