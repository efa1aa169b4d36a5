// detail::put_be / get_be / be_bytes / to_hex: the byte layout every wire format relies on.
#include <redcoord/core/detail/bytes.hpp>

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <string>

namespace {

using redcoord::detail::be_bytes;
using redcoord::detail::get_be;
using redcoord::detail::put_be;
using redcoord::detail::to_hex;

TEST(Bytes, BigEndianLayoutIsMostSignificantFirst) {
    EXPECT_EQ(be_bytes<8>(0x0102030405060708ULL),
              std::string("\x01\x02\x03\x04\x05\x06\x07\x08", 8));
    EXPECT_EQ(be_bytes<4>(0xdeadbeefULL), std::string("\xde\xad\xbe\xef", 4));
    EXPECT_EQ(be_bytes<2>(0x00ffULL), std::string("\x00\xff", 2));
    EXPECT_EQ(be_bytes<1>(0x7fULL), std::string("\x7f", 1));
    EXPECT_EQ(be_bytes<8>(0), std::string(8, '\0'));
    EXPECT_EQ(be_bytes<8>(~std::uint64_t{0}), std::string(8, '\xff'));
}

TEST(Bytes, NarrowFieldsKeepTheLowBytes) {
    // A 4-byte field of a wider value keeps its low 32 bits (the queue's attempts field).
    EXPECT_EQ(be_bytes<4>(0x1122334455667788ULL), std::string("\x55\x66\x77\x88", 4));
    EXPECT_EQ(get_be<4>(be_bytes<4>(0x1122334455667788ULL)), 0x55667788ULL);
}

TEST(Bytes, PutAppendsAndStoresInPlace) {
    std::string s = "ab";
    put_be<4>(s, 0x01020304);
    EXPECT_EQ(s, std::string("ab\x01\x02\x03\x04", 6));
    std::array<unsigned char, 16> id{};
    put_be<8>(id.data() + 8, 0xa1a2a3a4a5a6a7a8ULL);
    for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(id[i], 0) << i;
    for (std::size_t i = 8; i < 16; ++i) EXPECT_EQ(id[i], 0xa1 + (i - 8)) << i;
}

TEST(Bytes, GetReadsAtAnOffset) {
    const std::string wire("xx\x00\x00\x01\x00yy\xff\xff", 10);
    EXPECT_EQ(get_be<4>(wire, 2), 256u);
    EXPECT_EQ(get_be<2>(wire, 8), 0xffffu);
    EXPECT_EQ(get_be<1>(wire, 0), static_cast<std::uint64_t>('x'));
}

TEST(Bytes, RoundTripsEveryWidthOnSeededValues) {
    std::mt19937_64 rng(20261123);
    for (int i = 0; i < 2000; ++i) {
        const std::uint64_t v = rng();
        SCOPED_TRACE(v);
        EXPECT_EQ(get_be<8>(be_bytes<8>(v)), v);
        EXPECT_EQ(get_be<7>(be_bytes<7>(v)), v & 0x00ffffffffffffffULL);
        EXPECT_EQ(get_be<4>(be_bytes<4>(v)), v & 0xffffffffULL);
        EXPECT_EQ(get_be<3>(be_bytes<3>(v)), v & 0xffffffULL);
        EXPECT_EQ(get_be<2>(be_bytes<2>(v)), v & 0xffffULL);
        EXPECT_EQ(get_be<1>(be_bytes<1>(v)), v & 0xffULL);
    }
}

TEST(Bytes, BigEndianOrderSortsLikeTheNumbers) {
    // Why ids are big-endian: byte-wise comparison (Redis, memcmp) orders them numerically.
    std::mt19937_64 rng(7);
    for (int i = 0; i < 1000; ++i) {
        const std::uint64_t a = rng(), b = rng();
        EXPECT_EQ(a < b, be_bytes<8>(a) < be_bytes<8>(b)) << a << " " << b;
    }
}

TEST(Bytes, HexIsLowerCaseTwoDigitsPerByteAndBinarySafe) {
    EXPECT_EQ(to_hex(std::string_view{}), "");
    EXPECT_EQ(to_hex(std::string("\x00\x0f\xf0\xff\x7a", 5)), "000ff0ff7a");
    const std::array<std::uint8_t, 4> id{0xde, 0xad, 0xbe, 0xef};
    EXPECT_EQ(to_hex(id), "deadbeef");
    EXPECT_EQ(to_hex(be_bytes<8>(0x0123456789abcdefULL)), "0123456789abcdef");
    std::string all;
    for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
    const auto h = to_hex(all);
    ASSERT_EQ(h.size(), 512u);
    EXPECT_EQ(h.find_first_not_of("0123456789abcdef"), std::string::npos);
    for (int c = 0; c < 256; ++c)
        EXPECT_EQ(std::stoi(h.substr(static_cast<std::size_t>(2 * c), 2), nullptr, 16), c);
}

}  // namespace
