#include <redcoord/queue/envelope.hpp>

#include <gtest/gtest.h>

#include <string>

using namespace redcoord;
using namespace std::chrono_literals;

namespace {

envelope sample(std::string payload) {
    envelope e;
    for (std::size_t i = 0; i < e.id.size(); ++i) e.id[i] = static_cast<std::uint8_t>(0xf0 + i);
    e.attempts = 3;
    e.enqueued_at = std::chrono::system_clock::time_point(1'700'000'000'123ms);
    e.payload = std::move(payload);
    return e;
}

}  // namespace

TEST(Envelope, RoundTripsAllFields) {
    auto e = sample("hello");
    auto wire = encode_envelope(e);
    EXPECT_EQ(wire.size(), envelope_header_size + 5);
    EXPECT_EQ(wire.substr(0, 4), envelope_magic);
    auto d = decode_envelope(wire);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->id, e.id);
    EXPECT_EQ(d->attempts, 3u);
    EXPECT_EQ(d->enqueued_at, e.enqueued_at);
    EXPECT_EQ(d->payload, "hello");
}

TEST(Envelope, AttemptsAreBigEndianAtByte20) {
    // The Lua scripts rewrite this field in place, so its offset is part of the format.
    auto e = sample("x");
    e.attempts = 0x01020304;
    auto wire = encode_envelope(e);
    EXPECT_EQ(static_cast<unsigned char>(wire[20]), 1);
    EXPECT_EQ(static_cast<unsigned char>(wire[23]), 4);
}

TEST(Envelope, BinaryPayloadsSurvive) {
    std::string p("a\0b\r\nc\0", 7);
    p.push_back('\xff');
    auto d = decode_envelope(encode_envelope(sample(p)));
    ASSERT_TRUE(d);
    EXPECT_EQ(d->payload, p);
}

TEST(Envelope, EmptyAndLargePayloads) {
    auto d = decode_envelope(encode_envelope(sample("")));
    ASSERT_TRUE(d);
    EXPECT_TRUE(d->payload.empty());
    std::string big(16 * 1024 * 1024, 'z');
    big[12345] = '\0';
    auto d2 = decode_envelope(encode_envelope(sample(big)));
    ASSERT_TRUE(d2);
    EXPECT_EQ(d2->payload, big);
}

TEST(Envelope, PayloadThatLooksLikeAnEnvelopeStaysOpaque) {
    auto inner = encode_envelope(sample("inner"));
    auto d = decode_envelope(encode_envelope(sample(inner)));
    ASSERT_TRUE(d);
    EXPECT_EQ(d->payload, inner);
}

TEST(Envelope, NonEnvelopesAreRawPayloads) {
    EXPECT_FALSE(decode_envelope(""));
    EXPECT_FALSE(decode_envelope("plain job from redis-cli"));
    // Right magic, truncated header: not an envelope (delivered raw, never misparsed).
    auto wire = encode_envelope(sample("p"));
    EXPECT_FALSE(decode_envelope(std::string_view(wire).substr(0, envelope_header_size - 1)));
    // Wrong version byte.
    wire[3] = '\2';
    EXPECT_FALSE(decode_envelope(wire));
    // Exactly the header, empty payload, is an envelope.
    auto hdr = encode_envelope(sample(""));
    EXPECT_TRUE(decode_envelope(hdr));
}

TEST(Envelope, ExtremeTimesAreClamped) {
    auto e = sample("t");
    e.enqueued_at = std::chrono::system_clock::time_point(-5s);
    auto d = decode_envelope(encode_envelope(e));
    ASSERT_TRUE(d);
    EXPECT_EQ(d->enqueued_at.time_since_epoch().count(), 0);
    auto wire = encode_envelope(sample("t"));
    for (int i = 24; i < 32; ++i) wire[static_cast<std::size_t>(i)] = '\xff';
    auto d2 = decode_envelope(wire);
    ASSERT_TRUE(d2);
    EXPECT_GT(d2->enqueued_at.time_since_epoch().count(), 0);
}

TEST(Envelope, HexIds) {
    message_id id{};
    id[0] = 0xab;
    id[15] = 0x01;
    EXPECT_EQ(to_hex(id), "ab000000000000000000000000000001");
}

TEST(Envelope, Q7_ForeignPayloadWithMagicIsRaw) {
    // Another client's payload that happens to start with the magic and is long enough.
    std::string foreign(envelope_magic);
    for (int i = 0; i < 60; ++i) foreign.push_back(static_cast<char>(i * 37 + 5));
    EXPECT_FALSE(decode_envelope(foreign));
    // Even one that copies a real header but carries a different payload length.
    auto wire = encode_envelope(sample("payload"));
    EXPECT_FALSE(decode_envelope(wire + "more"));
    EXPECT_FALSE(decode_envelope(std::string_view(wire).substr(0, wire.size() - 1)));
    // A header whose check does not match its id.
    auto forged = wire;
    forged[4] = static_cast<char>(forged[4] ^ 1);
    EXPECT_FALSE(decode_envelope(forged));
    EXPECT_TRUE(decode_envelope(wire));
}
