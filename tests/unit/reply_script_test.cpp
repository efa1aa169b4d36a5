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

// cluster_publish::sharded: a second form whose literal PUBLISH calls are SPUBLISH, for
// connections to cluster nodes; everything else in the source is left as written.
TEST(Script, ShardedFormPublishesWithSpublish) {
    const std::string src =
        "-- PUBLISH in a comment stays\n"
        "redis.call('PUBLISH', KEYS[1] .. ':x', 'a')\n"
        "redis.pcall(\"PUBLISH\", ARGV[1], 'b')\n"
        "return redis.call('GET', 'PUBLISHED')";
    script s(src, cluster_publish::sharded);
    const script& sharded = s.for_cluster(true);
    ASSERT_NE(&sharded, &s);
    EXPECT_EQ(&s.for_cluster(false), &s);
    EXPECT_EQ(sharded.source(),
              "-- PUBLISH in a comment stays\n"
              "redis.call('SPUBLISH', KEYS[1] .. ':x', 'a')\n"
              "redis.pcall(\"SPUBLISH\", ARGV[1], 'b')\n"
              "return redis.call('GET', 'PUBLISHED')");
    EXPECT_NE(sharded.sha1(), s.sha1());
    EXPECT_EQ(sharded.calls(), (std::vector<std::string>{"SPUBLISH", "GET"}));
    EXPECT_EQ(s.calls(), (std::vector<std::string>{"PUBLISH", "GET"}));
    // Nothing to change, or not asked for: one form.
    script quiet("return redis.call('GET', KEYS[1])", cluster_publish::sharded);
    EXPECT_EQ(&quiet.for_cluster(true), &quiet);
    script plain(src);
    EXPECT_EQ(&plain.for_cluster(true), &plain);
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
