#include "endpoints.hpp"

#include <redcoord/core/errors.hpp>

#include <gtest/gtest.h>

using namespace std::chrono_literals;
using namespace redcoord::cli;

TEST(CliEndpoints, FlagsWinOverEnvironmentAndDefault) {
    EXPECT_EQ(choose_urls({"redis://a:1"}, "redis://b:2"), std::vector<std::string>{"redis://a:1"});
    EXPECT_EQ(choose_urls({}, "redis://b:2,redis://c:3"),
              (std::vector<std::string>{"redis://b:2", "redis://c:3"}));
    EXPECT_EQ(choose_urls({}, nullptr), std::vector<std::string>{std::string(default_url)});
    EXPECT_EQ(choose_urls({}, " , "), std::vector<std::string>{std::string(default_url)});
}

TEST(CliEndpoints, SplitKeepsSentinelListsTogether) {
    EXPECT_EQ(split_url_list("redis-sentinel://h1:26379,h2:26380/svc, redis://x:1"),
              (std::vector<std::string>{"redis-sentinel://h1:26379,h2:26380/svc", "redis://x:1"}));
    EXPECT_EQ(split_url_list(" redis://a:1 ,,redis://b:2,"),
              (std::vector<std::string>{"redis://a:1", "redis://b:2"}));
}

TEST(CliEndpoints, PasswordFromEnvironmentOnlyWhenUrlHasNone) {
    auto eps =
        resolve_endpoints({"redis://127.0.0.1:7000", "redis://:inurl@127.0.0.1:7001"}, "fromenv");
    ASSERT_EQ(eps.size(), 2u);
    EXPECT_EQ(eps[0].password, "fromenv");
    EXPECT_EQ(eps[1].password, "inurl");
    auto none = resolve_endpoints({"redis://127.0.0.1:7000"}, "");
    EXPECT_TRUE(none[0].password.empty());
    auto unset = resolve_endpoints({"redis://127.0.0.1:7000"}, nullptr);
    EXPECT_TRUE(unset[0].password.empty());
}

TEST(CliEndpoints, SentinelPasswordFromEnvironmentOnlyForSentinelEndpoints) {
    // REDCOORD_SENTINEL_PASSWORD: the sentinels' own password (issue 18), which a URL cannot
    // carry; the data nodes' password stays REDCOORD_PASSWORD's.
    auto eps =
        resolve_endpoints({"redis-sentinel://127.0.0.1:26379/mymaster", "redis://127.0.0.1:7000"},
                          "data", endpoint_timeouts{}, "sentinels");
    ASSERT_EQ(eps.size(), 2u);
    EXPECT_EQ(eps[0].sentinel_password, "sentinels");
    EXPECT_EQ(eps[0].password, "data");
    EXPECT_TRUE(eps[1].sentinel_password.empty());
    auto unset = resolve_endpoints({"redis-sentinel://127.0.0.1:26379/mymaster"}, nullptr,
                                   endpoint_timeouts{}, "");
    EXPECT_TRUE(unset[0].sentinel_password.empty());
    EXPECT_EQ(eps[0].to_string().find("sentinels"), std::string::npos);  // never printed
}

TEST(CliEndpoints, AppliesTimeouts) {
    auto eps =
        resolve_endpoints({"redis://127.0.0.1:7000"}, nullptr, endpoint_timeouts{250ms, 750ms});
    EXPECT_EQ(eps[0].connect_timeout, 250ms);
    EXPECT_EQ(eps[0].command_timeout, 750ms);
    EXPECT_THROW(
        (void)resolve_endpoints({"redis://127.0.0.1:7000"}, nullptr, endpoint_timeouts{0ms, 1s}),
        redcoord::invalid_argument);
}

// Issue 34 (C5): the flags used to overwrite the URL's timeouts even when not given.
TEST(CliEndpoints, KeepsTheUrlsTimeoutsUnlessAFlagIsGiven) {
    const std::vector<std::string> url{
        "redis://127.0.0.1:7000?connect_timeout=300ms&command_timeout=0"};
    auto kept = resolve_endpoints(url, nullptr, endpoint_timeouts{});
    EXPECT_EQ(kept[0].connect_timeout, 300ms);
    EXPECT_EQ(kept[0].command_timeout, 0ms);
    auto given = resolve_endpoints(url, nullptr, endpoint_timeouts{5s, std::nullopt});
    EXPECT_EQ(given[0].connect_timeout, 5s);
    EXPECT_EQ(given[0].command_timeout, 0ms);
    auto defaults = resolve_endpoints({"redis://127.0.0.1:7000"}, nullptr, endpoint_timeouts{});
    EXPECT_EQ(defaults[0].connect_timeout, 1s);
    EXPECT_EQ(defaults[0].command_timeout, 2s);
    // 0 waits forever for a reply, as in the URL; a connect deadline of 0 means nothing.
    EXPECT_EQ(resolve_endpoints({"redis://127.0.0.1:7000"}, nullptr, endpoint_timeouts{1s, 0ms})[0]
                  .command_timeout,
              0ms);
    try {
        (void)resolve_endpoints(url, nullptr, endpoint_timeouts{0ms, std::nullopt});
        FAIL();
    } catch (const redcoord::invalid_argument& e) {
        EXPECT_EQ(std::string(e.what()), "--connect-timeout must be > 0");
    }
}

TEST(CliEndpoints, BadUrlIsUsageErrorWithoutThePassword) {
    EXPECT_THROW((void)resolve_endpoints({"http://x"}, nullptr), redcoord::invalid_argument);
    EXPECT_THROW((void)resolve_endpoints({}, nullptr), redcoord::invalid_argument);
    try {
        (void)resolve_endpoints({"redis://:s3cret-pw@host:notaport"}, nullptr);
        FAIL();
    } catch (const redcoord::invalid_argument& e) {
        EXPECT_EQ(std::string(e.what()).find("s3cret-pw"), std::string::npos) << e.what();
    }
}

TEST(CliEndpoints, DuplicateServersRejectedAndPasswordNotPrinted) {
    try {
        (void)resolve_endpoints({"redis://:pw1@127.0.0.1:7000", "redis://127.0.0.1:7000"}, "pw2");
        FAIL();
    } catch (const redcoord::invalid_argument& e) {
        const std::string w = e.what();
        EXPECT_NE(w.find("twice"), std::string::npos) << w;
        EXPECT_EQ(w.find("pw1"), std::string::npos) << w;
        EXPECT_EQ(w.find("pw2"), std::string::npos) << w;
    }
}
