#include <redcoord/core/errors.hpp>
#include <redcoord/core/keys.hpp>

#include <gtest/gtest.h>

using namespace redcoord;

TEST(Keys, BuildsHashTaggedKeys) {
    EXPECT_EQ(make_key("redcoord:", "lock", "orders"), "redcoord:lock:{orders}");
    EXPECT_EQ(make_key("app:", "queue", "jobs", "processing"), "app:queue:{jobs}:processing");
}

TEST(Keys, ValidatesNames) {
    EXPECT_NO_THROW(validate_name("a", "name"));
    EXPECT_NO_THROW(validate_name(std::string(max_name_length, 'x'), "name"));
    EXPECT_THROW(validate_name("", "lock name"), invalid_argument);
    EXPECT_THROW(validate_name(std::string(max_name_length + 1, 'x'), "name"), invalid_argument);
    EXPECT_THROW(validate_name("a\rb", "name"), invalid_argument);
    EXPECT_THROW(validate_name("a\nb", "name"), invalid_argument);
    EXPECT_THROW(validate_name(std::string("a\0b", 3), "name"), invalid_argument);
    try {
        validate_name("", "channel");
    } catch (const invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("channel"), std::string::npos);
    }
}

TEST(Keys, EscapesGlobCharacters) {
    EXPECT_EQ(glob_escape("plain"), "plain");
    EXPECT_EQ(glob_escape("a*b?c[d]e\\f"), "a\\*b\\?c\\[d\\]e\\\\f");
    EXPECT_TRUE(has_glob_chars("x*"));
    EXPECT_TRUE(has_glob_chars("[x"));
    EXPECT_FALSE(has_glob_chars("x.y:z{w}"));
}

// Review nit (lock-election.md §4): a name starting with '}' gave an empty hash tag, so a
// primitive's keys (lock and fence) would land in different Cluster slots.
TEST(Keys, NameStartingWithClosingBraceIsRejected) {
    EXPECT_THROW(redcoord::validate_name("}x", "lock resource"), redcoord::invalid_argument);
    EXPECT_NO_THROW(redcoord::validate_name("x}", "lock resource"));  // the tag is still "x"
}
