// The CLI over TLS (issue 18): rediss:// URLs with their options, the system's CA store as the
// default trust (OpenSSL reads SSL_CERT_FILE in place of the system bundle), and the exit code
// and one-line message of a certificate the client does not trust.
#include "cli_harness.hpp"

#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/test_certificates.hpp>

using namespace cli_test;

namespace {

struct TlsCli : ::testing::Test {
    temp_dir dir;
    redcoord::testing::test_certificates certs;
    redcoord::testing::local_server server{[this] {
        redcoord::testing::server_options o;
        o.tls = redcoord::testing::test_server_tls(certs);
        return o;
    }()};
    std::string bare_url() const { return "rediss://127.0.0.1:" + std::to_string(server.port()); }
};

}  // namespace

TEST_F(TlsCli, UrlOptionsCarryTheCa) {
    auto r = run(dir, {"--json", "--redis", bare_url() + "?ca_file=" + certs.ca().string(),
                       "signal", "c", "x"});
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output, "{\"channel\":\"c\",\"receivers\":0}\n");
}

TEST_F(TlsCli, TheSystemStoreIsTheDefaultTrust) {
    auto trusted = run(dir, {"--redis", bare_url(), "signal", "c", "x"},
                       {"SSL_CERT_FILE=" + certs.ca().string()});
    EXPECT_EQ(trusted.status, 0) << trusted.output;
    // The system's own store does not hold the test CA.
    auto untrusted = run(dir, {"--redis", bare_url(), "signal", "c", "x"},
                         {"SSL_CERT_FILE=" + certs.foreign_ca().string()});
    EXPECT_EQ(untrusted.status, code::connection) << untrusted.output;
    EXPECT_TRUE(contains(untrusted.output, "certificate verify failed")) << untrusted.output;
    EXPECT_EQ(lines_of(untrusted.output).size(), 1u) << untrusted.output;
}

TEST_F(TlsCli, APlaintextUrlForATlsPortSaysToUseRediss) {
    auto r = run(
        dir, {"--redis", "redis://127.0.0.1:" + std::to_string(server.port()), "signal", "c", "x"});
    EXPECT_EQ(r.status, code::connection) << r.output;
    EXPECT_TRUE(contains(r.output, "rediss://")) << r.output;
}

TEST_F(TlsCli, TurningVerificationOffIsSaidOnceOnStandardError) {
    // A barrier wait opens a pooled connection and a pub/sub link: two handshakes, one notice.
    auto r = run(dir,
                 {"--redis", bare_url() + "?verify_peer=false", "barrier", "b", "--parties", "1",
                  "--timeout", "5s"},
                 {"SSL_CERT_FILE=" + certs.foreign_ca().string()});
    EXPECT_EQ(r.status, 0) << r.output;
    const std::string notice = "TLS peer verification is off";
    const auto first = r.output.find(notice);
    EXPECT_NE(first, std::string::npos) << r.output;
    EXPECT_EQ(r.output.find(notice, first + 1), std::string::npos) << r.output;
}
