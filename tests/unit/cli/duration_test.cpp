#include "duration.hpp"

#include <redcoord/core/errors.hpp>

#include <gtest/gtest.h>

using namespace std::chrono_literals;
using redcoord::cli::format_duration;
using redcoord::cli::parse_duration;

TEST(CliDuration, ParsesEachUnit) {
    EXPECT_EQ(parse_duration("500ms"), 500ms);
    EXPECT_EQ(parse_duration("20s"), 20s);
    EXPECT_EQ(parse_duration("2m"), 2min);
    EXPECT_EQ(parse_duration("1h"), 1h);
    EXPECT_EQ(parse_duration("0"), 0ms);
    EXPECT_EQ(parse_duration("0s"), 0ms);
}

TEST(CliDuration, ParsesCompoundsAndFractions) {
    EXPECT_EQ(parse_duration("1m30s"), 90s);
    EXPECT_EQ(parse_duration("1h2m3s4ms"), 1h + 2min + 3s + 4ms);
    EXPECT_EQ(parse_duration("1.5s"), 1500ms);
    EXPECT_EQ(parse_duration("0.25m"), 15s);
    EXPECT_EQ(parse_duration("1.9ms"), 1ms);  // rounded down
}

TEST(CliDuration, RejectsBadInput) {
    for (const char* bad :
         {"", "5", "10x", "ms", "-1s", "1 s", "s10", "1.2.3s", "1e3s", ".s", "99999999999h"}) {
        EXPECT_THROW((void)parse_duration(bad), redcoord::invalid_argument) << bad;
    }
}

TEST(CliDuration, ErrorNamesTheInputAndTheForm) {
    try {
        (void)parse_duration("10x");
        FAIL();
    } catch (const redcoord::invalid_argument& e) {
        const std::string w = e.what();
        EXPECT_NE(w.find("'10x'"), std::string::npos) << w;
        EXPECT_NE(w.find("500ms"), std::string::npos) << w;
    }
}

TEST(CliDuration, FormatsRoundTrip) {
    EXPECT_EQ(format_duration(0ms), "0s");
    EXPECT_EQ(format_duration(500ms), "500ms");
    EXPECT_EQ(format_duration(90s), "1m30s");
    EXPECT_EQ(format_duration(1h + 5ms), "1h5ms");
    for (auto d : {1ms, 999ms, 1000ms, 61001ms, std::chrono::milliseconds(3'600'000 * 25 + 7)})
        EXPECT_EQ(parse_duration(format_duration(d)), d);
}
