#include <redcoord/core/token.hpp>

#include <gtest/gtest.h>

#include <set>

using namespace redcoord;

TEST(Token, IsFortyHexCharacters) {
    auto t = random_token();
    ASSERT_EQ(t.size(), 40u);
    for (char c : t) EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << t;
}

TEST(Token, DoesNotRepeat) {
    std::set<std::string> seen;
    for (int i = 0; i < 10000; ++i) EXPECT_TRUE(seen.insert(random_token()).second);
}

TEST(Token, RandomBetweenStaysInRange) {
    bool lo = false, hi = false;
    for (int i = 0; i < 2000; ++i) {
        auto v = random_between(3, 7);
        EXPECT_GE(v, 3u);
        EXPECT_LE(v, 7u);
        lo |= v == 3;
        hi |= v == 7;
    }
    EXPECT_TRUE(lo && hi);
    EXPECT_EQ(random_between(5, 5), 5u);
    EXPECT_EQ(random_between(9, 1), 9u);
}
