// The ADDR of --metrics-listen and `dashboard --listen`.
#include "listen_address.hpp"

#include <redcoord/core/errors.hpp>

#include <gtest/gtest.h>

namespace {

using redcoord::cli::parse_listen_address;

TEST(ListenAddress, FormsAndLoopbackDefault) {
    auto a = parse_listen_address("127.0.0.1:8080", "--listen");
    EXPECT_EQ(a.host, "127.0.0.1");
    EXPECT_EQ(a.port, 8080);
    auto b = parse_listen_address("[::1]:0", "--listen");
    EXPECT_EQ(b.host, "::1");
    EXPECT_EQ(b.port, 0);
    EXPECT_EQ(parse_listen_address("9100", "--listen").host, "127.0.0.1");
    EXPECT_EQ(parse_listen_address(":9100", "--listen").host, "127.0.0.1");
    EXPECT_EQ(parse_listen_address("0.0.0.0:1", "--listen").host, "0.0.0.0");
}

TEST(ListenAddress, BadFormsNameTheFlag) {
    for (const char* bad : {"", "localhost:80", "1.2.3.4:", "1.2.3.4:65536", "[::1]", "[]:80",
                            "::1:80", "x", "1.2.3.4:8o"}) {
        try {
            (void)parse_listen_address(bad, "--metrics-listen");
            ADD_FAILURE() << "accepted '" << bad << "'";
        } catch (const redcoord::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find("--metrics-listen"), std::string::npos);
        }
    }
}

}  // namespace
