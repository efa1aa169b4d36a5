#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/errors.hpp>

#include <gtest/gtest.h>

using namespace redcoord;

TEST(Endpoint, ParsesPlainHostPort) {
    auto e = parse_endpoint("redis://example.org:6380");
    EXPECT_EQ(e.host, "example.org");
    EXPECT_EQ(e.port, 6380);
    EXPECT_EQ(e.db, 0);
    EXPECT_TRUE(e.password.empty());
    EXPECT_FALSE(e.is_sentinel());
}

TEST(Endpoint, DefaultsPortTo6379) {
    auto e = parse_endpoint("redis://localhost");
    EXPECT_EQ(e.host, "localhost");
    EXPECT_EQ(e.port, 6379);
}

TEST(Endpoint, ParsesUserPasswordAndDb) {
    auto e = parse_endpoint("redis://alice:s3cr%40t@10.0.0.1:7000/3");
    EXPECT_EQ(e.user, "alice");
    EXPECT_EQ(e.password, "s3cr@t");
    EXPECT_EQ(e.host, "10.0.0.1");
    EXPECT_EQ(e.port, 7000);
    EXPECT_EQ(e.db, 3);
}

TEST(Endpoint, ParsesPasswordOnlyForms) {
    EXPECT_EQ(parse_endpoint("redis://:pw@h").password, "pw");
    EXPECT_EQ(parse_endpoint("redis://pw@h").password, "pw");
    EXPECT_TRUE(parse_endpoint("redis://:pw@h").user.empty());
}

TEST(Endpoint, ParsesIpv6) {
    auto e = parse_endpoint("redis://[::1]:6390");
    EXPECT_EQ(e.host, "::1");
    EXPECT_EQ(e.port, 6390);
    EXPECT_EQ(e.to_string(), "redis://[::1]:6390");
}

TEST(Endpoint, ParsesUnixSocket) {
    auto e = parse_endpoint("unix:///run/redis.sock?db=2");
    EXPECT_EQ(e.unix_path, "/run/redis.sock");
    EXPECT_EQ(e.db, 2);
    EXPECT_EQ(parse_endpoint("unix:///tmp/r.sock").db, 0);
}

TEST(Endpoint, ParsesSentinel) {
    auto e = parse_endpoint("redis-sentinel://:pw@s1:26380,s2,s3:1/mymaster/4");
    ASSERT_EQ(e.sentinels.size(), 3u);
    EXPECT_EQ(e.sentinels[0], (host_port{"s1", 26380}));
    EXPECT_EQ(e.sentinels[1], (host_port{"s2", 26379}));
    EXPECT_EQ(e.sentinels[2], (host_port{"s3", 1}));
    EXPECT_EQ(e.service, "mymaster");
    EXPECT_EQ(e.db, 4);
    EXPECT_EQ(e.password, "pw");
    EXPECT_TRUE(e.is_sentinel());
    auto m = e.with_address({"10.1.1.1", 6379});
    EXPECT_FALSE(m.is_sentinel());
    EXPECT_EQ(m.password, "pw");
    EXPECT_EQ(m.db, 4);
}

class EndpointRejects : public ::testing::TestWithParam<const char*> {};

TEST_P(EndpointRejects, WithTypedErrorWithoutPassword) {
    try {
        (void)parse_endpoint(GetParam());
        FAIL() << "accepted " << GetParam();
    } catch (const invalid_argument& e) {
        EXPECT_EQ(std::string(e.what()).find("hunter2"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("invalid redis URI"), std::string::npos);
    }
}

INSTANTIATE_TEST_SUITE_P(Malformed, EndpointRejects,
                         ::testing::Values("", "localhost:6379", "http://h:1", "redis://", "redis://:hunter2@",
                                           "redis://h:0", "redis://h:65536", "redis://h:12x", "redis://h/abc",
                                           "redis://h/-1", "redis://[::1", "redis://u:hunter2@h:port",
                                           "unix://relative.sock", "unix:///x.sock?foo=1",
                                           "redis-sentinel://h1,h2", "redis-sentinel://:hunter2@h1:1/",
                                           "redis://h o:1", "redis://:hunter2%zz@h", "redis://a@b@:1"));

TEST(Endpoint, ToStringRedactsPassword) {
    auto e = parse_endpoint("redis://bob:hunter2@h:1/2");
    auto s = e.to_string();
    EXPECT_EQ(s.find("hunter2"), std::string::npos);
    EXPECT_EQ(s, "redis://bob:***@h:1/2");
    EXPECT_EQ(parse_endpoint("redis-sentinel://:hunter2@a:1/m").to_string().find("hunter2"), std::string::npos);
}
