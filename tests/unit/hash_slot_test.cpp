// hash_slot(): the Redis Cluster specification's reference values, and its hash-tag rules.
#include <redcoord/core/hash_slot.hpp>

#include <gtest/gtest.h>

#include <string>

using redcoord::crc16_xmodem;
using redcoord::hash_slot;

TEST(HashSlot, Crc16MatchesTheSpecificationsCheckValue) {
    // The specification: the CRC16 of "123456789" is 0x31C3.
    EXPECT_EQ(crc16_xmodem("123456789"), 0x31C3);
    EXPECT_EQ(crc16_xmodem(""), 0);
}

TEST(HashSlot, KnownSlots) {
    // Values CLUSTER KEYSLOT returns on Redis 7.
    EXPECT_EQ(hash_slot("123456789"), 12739);
    EXPECT_EQ(hash_slot("foo"), 12182);
    EXPECT_EQ(hash_slot("bar"), 5061);
    EXPECT_EQ(hash_slot(""), 0);
}

TEST(HashSlot, OnlyTheFirstNonEmptyHashTagIsHashed) {
    EXPECT_EQ(hash_slot("{user1000}.following"), hash_slot("{user1000}.followers"));
    EXPECT_EQ(hash_slot("{user1000}.following"), hash_slot("user1000"));
    // The first `{` and the first `}` after it: "foo{{bar}}zap" hashes "{bar".
    EXPECT_EQ(hash_slot("foo{{bar}}zap"), hash_slot("{bar"));
    // An empty tag means the whole key is hashed.
    EXPECT_EQ(hash_slot("foo{}{bar}"), crc16_xmodem("foo{}{bar}") % 16384);
    // Only the first tag counts.
    EXPECT_EQ(hash_slot("foo{bar}{zap}"), hash_slot("bar"));
    // No closing brace: the whole key.
    EXPECT_EQ(hash_slot("foo{bar"), crc16_xmodem("foo{bar") % 16384);
}

TEST(HashSlot, EveryKeyOfAPrimitiveSharesItsSlot) {
    const std::string name = "nightly-report";
    const auto slot = hash_slot("redcoord:election:{" + name + "}");
    EXPECT_EQ(hash_slot("redcoord:election:{" + name + "}:epoch"), slot);
    EXPECT_EQ(hash_slot("redcoord:lock:{" + name + "}"), slot);
}

TEST(HashSlot, BinaryKeysAreHashedByTheirBytes) {
    const std::string with_nul("a\0b", 3);
    EXPECT_NE(hash_slot(with_nul), hash_slot("a"));
    EXPECT_LT(hash_slot("\xff\xfe"), 16384);
}
