#include <redcoord/core/detail/script_argv.hpp>
#include <redcoord/core/detail/sha1.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/reply.hpp>
#include <redcoord/core/script.hpp>

#include <gtest/gtest.h>

using namespace redcoord;

TEST(Reply, AccessorsCheckTheKind) {
    auto s = reply::make_text(reply::kind::string, std::string("a\0b", 3));
    EXPECT_EQ(s.text().size(), 3u);
    EXPECT_EQ(s.maybe_text(), std::string("a\0b", 3));
    EXPECT_THROW((void)s.integer(), protocol_error);
    EXPECT_THROW((void)s.elements(), protocol_error);
    auto n = reply{};
    EXPECT_TRUE(n.is_nil());
    EXPECT_EQ(n.maybe_text(), std::nullopt);
    auto i = reply::make_integer(-42);
    EXPECT_EQ(i.integer(), -42);
    EXPECT_THROW((void)i.text(), protocol_error);
    auto ok = reply::make_text(reply::kind::status, "OK");
    EXPECT_TRUE(ok.is_status("OK"));
    EXPECT_FALSE(s.is_status("OK"));
    auto a = reply::make_array({i, n});
    EXPECT_EQ(a.elements().size(), 2u);
}

TEST(Script, ComputesRedisSha1) {
    // Known value: redis-cli SCRIPT LOAD "return 1"
    script s("return 1");
    EXPECT_EQ(s.sha1(), "e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
    EXPECT_THROW(script(""), invalid_argument);
}

TEST(Script, BuildsArgvWithValuesAsArguments) {
    script s("return redis.call('GET', KEYS[1])");
    std::vector<std::string_view> keys{"k"};
    std::vector<std::string_view> args{"v1", "'); evil()"};
    auto v = redcoord::detail::script_command(s, true, keys, args);
    ASSERT_EQ(v.size(), 6u);
    EXPECT_EQ(v[0], "EVALSHA");
    EXPECT_EQ(v[1], s.sha1());
    EXPECT_EQ(v[2], "1");
    EXPECT_EQ(v[3], "k");
    EXPECT_EQ(v[5], "'); evil()");
    EXPECT_EQ(redcoord::detail::script_command(s, false, keys, args)[1], s.source());
    EXPECT_TRUE(is_noscript(reply::make_text(reply::kind::error, "NOSCRIPT No matching script")));
    EXPECT_FALSE(is_noscript(reply::make_text(reply::kind::string, "NOSCRIPT")));
}

TEST(Script, Sha1MatchesKnownDigests) {
    // FIPS 180 test vectors, and the empty string.
    EXPECT_EQ(redcoord::detail::sha1_hex("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
    EXPECT_EQ(redcoord::detail::sha1_hex(""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    EXPECT_EQ(
        redcoord::detail::sha1_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
        "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
    const std::string binary("\0\xff\x01", 3);
    EXPECT_EQ(redcoord::detail::sha1_hex(binary).size(), 40u);
}
