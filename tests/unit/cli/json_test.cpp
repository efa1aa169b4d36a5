#include "json.hpp"

#include <gtest/gtest.h>

using namespace redcoord::cli;

TEST(CliJson, QuotesAndEscapes) {
    EXPECT_EQ(json_quote("plain"), "\"plain\"");
    EXPECT_EQ(json_quote("a\"b\\c\n\r\t"), "\"a\\\"b\\\\c\\n\\r\\t\"");
    EXPECT_EQ(json_quote(std::string("\0\x01", 2)), "\"\\u0000\\u0001\"");
    EXPECT_EQ(json_quote("h\xc3\xa9llo \xe2\x82\xac"),
              "\"h\xc3\xa9llo \xe2\x82\xac\"");               // valid UTF-8 passes
    EXPECT_EQ(json_quote("\xff\xc3"), "\"\\u00ff\\u00c3\"");  // invalid bytes escaped
    EXPECT_EQ(json_quote("\xc0\xaf"), "\"\\u00c0\\u00af\"");  // overlong form
}

TEST(CliJson, ObjectsKeepOrderAndTypes) {
    json_object o;
    o.add("s", "x").add("i", -3).add("u", std::uint64_t{18446744073709551615ull}).add("b", true);
    o.add("n", std::optional<std::string>{}).add("o", std::optional<std::string>{"v"});
    o.add_raw("a", json_array({"1", "\"two\""}));
    EXPECT_EQ(
        o.str(),
        R"({"s":"x","i":-3,"u":18446744073709551615,"b":true,"n":null,"o":"v","a":[1,"two"]})");
    EXPECT_EQ(json_object().str(), "{}");
    EXPECT_EQ(json_array({}), "[]");
}
