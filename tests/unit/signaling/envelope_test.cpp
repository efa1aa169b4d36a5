#include <redcoord/core/errors.hpp>
#include <redcoord/signaling/envelope.hpp>

#include <gtest/gtest.h>

using namespace redcoord::detail;

TEST(Envelope, RoundTripsBinaryPayloads) {
    const std::string payload("a\0b\r\nc", 6);
    std::string wire = envelope_header(0x0102030405060708ULL, 42);
    ASSERT_EQ(wire.size(), envelope_overhead);
    wire += payload;
    auto env = open_envelope(wire);
    ASSERT_TRUE(env);
    EXPECT_EQ(env->payload, payload);
    EXPECT_EQ(env->id.size(), envelope_id_size);
    EXPECT_EQ(env->id, envelope_header(0x0102030405060708ULL, 42).substr(envelope_magic.size()));
}

TEST(Envelope, EmptyPayloadIsStillAnEnvelope) {
    auto env = open_envelope(envelope_header(1, 1));
    ASSERT_TRUE(env);
    EXPECT_TRUE(env->payload.empty());
}

TEST(Envelope, IdsDifferBySequenceAndOrigin) {
    EXPECT_NE(envelope_header(1, 1), envelope_header(1, 2));
    EXPECT_NE(envelope_header(1, 1), envelope_header(2, 1));
}

TEST(Envelope, PlainMessagesAreNotEnvelopes) {
    EXPECT_FALSE(open_envelope("hello"));
    EXPECT_FALSE(open_envelope(""));
    // The magic alone, too short to hold an id.
    EXPECT_FALSE(open_envelope(std::string(envelope_magic) + "short"));
    // Twenty bytes that do not start with the magic.
    EXPECT_FALSE(open_envelope(std::string(envelope_overhead, 'x')));
}

TEST(RecentIds, DropsDuplicatesWithinTheWindow) {
    recent_ids w(3);
    EXPECT_TRUE(w.insert("a"));
    EXPECT_FALSE(w.insert("a"));
    EXPECT_TRUE(w.insert("b"));
    EXPECT_TRUE(w.insert("c"));
    EXPECT_FALSE(w.insert("b"));
    EXPECT_EQ(w.size(), 3u);
}

TEST(RecentIds, EvictsTheOldestFirst) {
    recent_ids w(2);
    EXPECT_TRUE(w.insert("a"));
    EXPECT_TRUE(w.insert("b"));
    EXPECT_TRUE(w.insert("c"));  // evicts a
    EXPECT_EQ(w.size(), 2u);
    EXPECT_FALSE(w.insert("c"));
    EXPECT_FALSE(w.insert("b"));
    EXPECT_TRUE(w.insert("a"));  // forgotten, so accepted again
}

TEST(RecentIds, RejectsAnEmptyWindow) { EXPECT_THROW(recent_ids(0), redcoord::invalid_argument); }
