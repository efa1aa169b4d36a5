// The generated version header and the library agree, and follow MAJOR.MINOR.PATCH.
#include <redcoord/version.hpp>

#include <gtest/gtest.h>

#include <string>

TEST(Version, LibraryMatchesHeaders) { EXPECT_STREQ(redcoord::version(), REDCOORD_VERSION_STRING); }

TEST(Version, StringIsMajorMinorPatch) {
    std::string expected = std::to_string(REDCOORD_VERSION_MAJOR) + "." +
                           std::to_string(REDCOORD_VERSION_MINOR) + "." +
                           std::to_string(REDCOORD_VERSION_PATCH);
    EXPECT_EQ(expected, REDCOORD_VERSION_STRING);
}
