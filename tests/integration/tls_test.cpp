// TLS transport (issue 18) against real `redis-server --tls-port` processes, with certificates
// the test makes with the openssl command: what works, and the clear error of each failure.
#include <redcoord/core/connection.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/core/subscriber.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/test_certificates.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

using namespace redcoord;
using namespace std::chrono_literals;
using redcoord::testing::local_server;
using redcoord::testing::server_options;
using redcoord::testing::test_certificates;

namespace {

const test_certificates& certs() {
    static const test_certificates c;
    return c;
}

server_options tls_server(const redcoord::testing::cert_pair& served, bool auth_clients = false) {
    return redcoord::testing::tls_server_options(certs(), served, auth_clients);
}

// An endpoint for `s` over TLS, trusting the test CA, with a short connect deadline.
endpoint tls_endpoint(const local_server& s) { return redcoord::testing::tls_endpoint(certs(), s); }

// The message of the error `fn` throws as E, or a failure.
template <class E, class Fn>
std::string error_of(Fn&& fn) {
    try {
        fn();
    } catch (const E& e) {
        return e.what();
    } catch (const std::exception& e) {
        ADD_FAILURE() << "wrong error type: " << e.what();
        return {};
    }
    ADD_FAILURE() << "no error";
    return {};
}

bool has(const std::string& text, std::string_view part) {
    return text.find(part) != std::string::npos;
}

}  // namespace

TEST(Tls, VerifiedConnectionCarriesCommandsPipelinesAndLargeBinaryValues) {
    local_server s(tls_server(certs().server()));
    connection c(tls_endpoint(s));
    EXPECT_EQ(c.command({"PING"}).text(), "PONG");
    // Larger than one TLS record (16 KiB) and than the socket buffers: partial writes, many records.
    std::string big(3 * 1024 * 1024, '\0');
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 131 % 256);
    c.command({"SET", "big", big});
    EXPECT_EQ(c.command({"GET", "big"}).text(), big);
    std::vector<std::vector<std::string>> cmds;
    for (int i = 0; i < 500; ++i) cmds.push_back({"INCR", "n"});
    const auto replies = c.pipeline(cmds);
    ASSERT_EQ(replies.size(), 500u);
    EXPECT_EQ(replies.back().integer(), 500);
}

TEST(Tls, UriWithCaFileAndCaDirBothWork) {
    local_server s(tls_server(certs().server()));
    const std::string base = "rediss://127.0.0.1:" + std::to_string(s.port());
    connection a(parse_endpoint(base + "?ca_file=" + certs().ca().string()));
    EXPECT_EQ(a.command({"PING"}).text(), "PONG");
    connection b(
        parse_endpoint(base + "?ca_dir=" + certs().ca_dir().string() + "&min_tls_version=1.3"));
    EXPECT_EQ(b.command({"PING"}).text(), "PONG");
    connection l(parse_endpoint("rediss://localhost:" + std::to_string(s.port()) +
                                "?ca_file=" + certs().ca().string()));
    EXPECT_EQ(l.command({"PING"}).text(), "PONG");
}

TEST(Tls, UntrustedCaIsATlsErrorWithOpensslsReason) {
    local_server s(tls_server(certs().server()));
    auto e = tls_endpoint(s);
    e.tls.ca_file = certs().foreign_ca().string();
    const auto msg = error_of<tls_error>([&] { connection c(e); });
    EXPECT_TRUE(has(msg, "certificate verify failed")) << msg;
    EXPECT_TRUE(has(msg, "issuer") || has(msg, "self-signed")) << msg;
}

TEST(Tls, ExpiredCertificateIsATlsError) {
    local_server s(tls_server(certs().expired()));
    const auto msg = error_of<tls_error>([&] { connection c(tls_endpoint(s)); });
    EXPECT_TRUE(has(msg, "expired")) << msg;
}

TEST(Tls, CertificateForAnotherHostIsATlsErrorUnlessThatNameIsExpected) {
    local_server s(tls_server(certs().wrong_host()));
    auto e = tls_endpoint(s);
    const auto msg = error_of<tls_error>([&] { connection c(e); });
    EXPECT_TRUE(has(msg, "mismatch")) << msg;
    e.tls.server_name = "other.example";  // SNI and the name checked
    connection c(e);
    EXPECT_EQ(c.command({"PING"}).text(), "PONG");
}

TEST(Tls, VerificationOffAcceptsAnyCertificate) {
    local_server s(tls_server(certs().expired()));
    auto e = tls_endpoint(s);
    e.tls.ca_file.clear();
    e.tls.verify_peer = false;
    connection c(e);
    EXPECT_EQ(c.command({"PING"}).text(), "PONG");
}

TEST(Tls, MutualTlsNeedsTheClientCertificate) {
    local_server s(tls_server(certs().server(), /*auth_clients=*/true));
    auto e = tls_endpoint(s);
    const auto t0 = std::chrono::steady_clock::now();
    const auto msg = error_of<tls_error>([&] { connection c(e); });
    EXPECT_LT(std::chrono::steady_clock::now() - t0, e.connect_timeout)
        << "must fail, not time out";
    EXPECT_TRUE(has(msg, "certificate")) << msg;
    e.tls.cert_file = certs().client().cert.string();
    e.tls.key_file = certs().client().key.string();
    connection c(e);
    EXPECT_EQ(c.command({"PING"}).text(), "PONG");
}

TEST(Tls, MissingCertificateFilesAreTlsErrorsNamingTheFile) {
    local_server s(tls_server(certs().server()));
    auto e = tls_endpoint(s);
    e.tls.ca_file = "/nonexistent/ca.pem";
    EXPECT_TRUE(has(error_of<tls_error>([&] { connection c(e); }), "/nonexistent/ca.pem"));
    e = tls_endpoint(s);
    e.tls.cert_file = certs().client().cert.string();
    e.tls.key_file = certs().server().key.string();  // not the certificate's key
    const auto msg = error_of<tls_error>([&] { connection c(e); });
    EXPECT_TRUE(has(msg, "client key")) << msg;
}

TEST(Tls, NoCommonProtocolVersionIsATlsError) {
    auto o = tls_server(certs().server());
    o.config.emplace_back("tls-protocols", "TLSv1.2");
    local_server s(o);
    auto e = tls_endpoint(s);
    e.tls.min_version = tls_version::v1_3;
    const auto msg = error_of<tls_error>([&] { connection c(e); });
    EXPECT_TRUE(has(msg, "TLS handshake")) << msg;
}

TEST(Tls, PlaintextClientOnTheTlsPortFailsFastSayingUseRediss) {
    local_server s(tls_server(certs().server()));
    endpoint e;
    e.host = "127.0.0.1";
    e.port = s.port();
    e.connect_timeout = 2s;
    const auto t0 = std::chrono::steady_clock::now();
    const auto msg = error_of<connection_error>([&] { connection c(e); });
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
    EXPECT_TRUE(has(msg, "rediss://")) << msg;
}

TEST(Tls, TlsClientOnAPlaintextPortSaysSo) {
    local_server s;  // plaintext, unless the whole program runs over TLS
    if (s.options().tls) GTEST_SKIP() << "REDCOORD_TEST_TLS=1: no plaintext server here";
    auto e = tls_endpoint(s);
    e.connect_timeout = 500ms;
    try {
        connection c(e);
        FAIL() << "connected";
    } catch (const tls_error& x) {
        EXPECT_TRUE(has(x.what(), "plaintext")) << x.what();
    } catch (const timeout_error& x) {
        EXPECT_TRUE(has(x.what(), "plaintext")) << x.what();
    }
}

TEST(Tls, PoolAndSubscriberWorkOverTls) {
    local_server s(tls_server(certs().server()));
    connection_pool pool(tls_endpoint(s));
    std::atomic<int> got{0};
    subscriber sub(tls_endpoint(s), [&](const pubsub_message& m) {
        if (m.payload == "hello") ++got;
    });
    ASSERT_TRUE(sub.subscribe({"ch"}, 5s));
    for (int i = 0; i < 3; ++i) pool.borrow()->command({"PUBLISH", "ch", "hello"});
    EXPECT_TRUE(redcoord::testing::eventually([&] { return got.load() == 3; }, 5s));
}

TEST(Tls, ServerDeathMidSessionIsAConnectionErrorNotAHangOrSigpipe) {
    local_server s(tls_server(certs().server()));
    auto e = tls_endpoint(s);
    e.command_timeout = 1s;
    connection c(e);
    EXPECT_EQ(c.command({"PING"}).text(), "PONG");
    s.kill();
    // Twice: the second write goes to a reset socket, which would raise SIGPIPE.
    EXPECT_THROW(c.command({"PING"}), connection_error);
    EXPECT_THROW(c.command({"PING"}), connection_error);
    s.restart();
    connection again(e);
    EXPECT_EQ(again.command({"PING"}).text(), "PONG");
}

TEST(Tls, PausedServerIsATimeoutWithinTheCommandTimeout) {
    local_server s(tls_server(certs().server()));
    auto e = tls_endpoint(s);
    e.command_timeout = 300ms;
    connection c(e);
    s.pause();
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_THROW(c.command({"PING"}), timeout_error);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
    s.resume();
}
