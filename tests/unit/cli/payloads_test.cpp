// The CLI's payload input (issue 34, C7): base64 both ways, and which combinations of '-',
// --file and arguments are refused.
#include "payloads.hpp"

#include <redcoord/core/errors.hpp>

#include <gtest/gtest.h>

using namespace redcoord::cli;

TEST(CliPayloads, Base64RoundTripsEveryByte) {
    std::string all;
    for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
    for (std::size_t n = 0; n <= 5; ++n) {
        const std::string part = all.substr(250 - n, n);
        EXPECT_EQ(base64_decode(base64_encode(part)), part) << n;
    }
    EXPECT_EQ(base64_decode(base64_encode(all)), all);
    EXPECT_EQ(base64_encode(std::string("a\0b", 3)), "YQBi");
    EXPECT_EQ(base64_encode("ab"), "YWI=");
    EXPECT_EQ(base64_decode("YW\nI=\n"), "ab");  // newlines (base64(1) output) and padding
    EXPECT_EQ(base64_decode("YWI"), "ab");       // padding optional
}

TEST(CliPayloads, Base64RejectsOtherText) {
    EXPECT_THROW((void)base64_decode("not*base64"), redcoord::invalid_argument);
    EXPECT_THROW((void)base64_decode("YWI=YQ"), redcoord::invalid_argument);  // data after '='
    EXPECT_THROW((void)base64_decode("Y"), redcoord::invalid_argument);       // truncated
}

TEST(CliPayloads, StdinAndFileAreOnePayloadEach) {
    payload_input none;
    EXPECT_THROW((void)read_payloads(none), redcoord::invalid_argument);
    payload_input mixed{{"a", "-"}, "", false};
    EXPECT_THROW((void)read_payloads(mixed), redcoord::invalid_argument);
    payload_input file_and_arg{{"a"}, "/etc/hostname", false};
    EXPECT_THROW((void)read_payloads(file_and_arg), redcoord::invalid_argument);
    payload_input missing{{}, "/nonexistent/file", false};
    try {
        (void)read_payloads(missing);
        ADD_FAILURE() << "no error";
    } catch (const redcoord::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("--file '/nonexistent/file': No such file"),
                  std::string::npos)
            << e.what();
    }
    payload_input args{{"a", "b"}, "", false};
    EXPECT_EQ(read_payloads(args), (std::vector<std::string>{"a", "b"}));
    payload_input b64{{"YQBi"}, "", true};
    EXPECT_EQ(read_payloads(b64), (std::vector<std::string>{std::string("a\0b", 3)}));
}
