// The election round's judgement without a server: scripted replies, a fake clock.
#include "round.hpp"

#include <redcoord/core/errors.hpp>

#include <gtest/gtest.h>

using namespace redcoord;
using namespace std::chrono_literals;
using detail::judge_round;
using detail::parse_round_reply;
using detail::round_reply;
using tp = std::chrono::steady_clock::time_point;

namespace {
const tp t0 = tp(std::chrono::seconds(1000));

reply script_reply(std::int64_t is_holder, std::int64_t epoch, std::int64_t round,
                   std::optional<std::string> holder, std::int64_t new_term) {
    return reply::make_array({reply::make_integer(is_holder), reply::make_integer(epoch),
                              reply::make_integer(round),
                              holder ? reply::make_text(reply::kind::string, *holder) : reply{},
                              reply::make_integer(new_term)});
}
round_reply ours(std::uint64_t epoch) { return {true, epoch, 7, "me", false}; }
}  // namespace

TEST(ElectionRound, ParsesTheScriptReply) {
    auto r = parse_round_reply(script_reply(1, 42, 3, "me", 1));
    EXPECT_TRUE(r.holder_is_us);
    EXPECT_EQ(r.epoch, 42u);
    EXPECT_EQ(r.round, 3);
    EXPECT_EQ(r.holder, std::optional<std::string>("me"));
    EXPECT_TRUE(r.new_term);
    r = parse_round_reply(script_reply(0, 41, 9, std::nullopt, 0));
    EXPECT_FALSE(r.holder_is_us);
    EXPECT_FALSE(r.holder);
    EXPECT_FALSE(r.new_term);
}

TEST(ElectionRound, RejectsErrorsAndOtherShapes) {
    EXPECT_THROW(
        (void)parse_round_reply(reply::make_text(reply::kind::error, "ERR epoch would reach 2^53")),
        reply_error);
    EXPECT_THROW((void)parse_round_reply(reply::make_integer(1)), protocol_error);
    EXPECT_THROW((void)parse_round_reply(reply::make_array({reply::make_integer(1)})),
                 protocol_error);
    auto bad = script_reply(1, 42, 3, "me", 1);
    auto e = bad.elements();
    e[1] = reply::make_text(reply::kind::string, "42");
    EXPECT_THROW((void)parse_round_reply(reply::make_array(e)), protocol_error);
}

TEST(ElectionRound, LeaseEndIsSendTimePlusTermMinusDrift) {
    const auto r = judge_round(ours(5), t0, t0 + 1ms, -1, 300ms, 5ms, 0);
    EXPECT_TRUE(r.leader);
    EXPECT_EQ(r.sent_at, t0);
    EXPECT_EQ(r.deadline, t0 + 295ms);
    EXPECT_EQ(r.epoch, 5u);
    EXPECT_EQ(r.acks, -1);
}

// A reply that arrives at or after the lease end it would confirm confirms nothing.
TEST(ElectionRound, AReplyAtTheLeaseEndIsTooLate) {
    const auto end = t0 + 295ms;
    EXPECT_TRUE(judge_round(ours(5), t0, end - 1ns, -1, 300ms, 5ms, 0).leader);
    EXPECT_FALSE(judge_round(ours(5), t0, end, -1, 300ms, 5ms, 0).leader);
    EXPECT_FALSE(judge_round(ours(5), t0, end + 1ns, -1, 300ms, 5ms, 0).leader);
    // Still reported as ours: the elector keeps its old lease end on such a reply.
    EXPECT_TRUE(judge_round(ours(5), t0, end, -1, 300ms, 5ms, 0).holder_is_us);
}

TEST(ElectionRound, AnotherHolderNeverLeads) {
    const auto r = judge_round({false, 9, 4, "other", false}, t0, t0, -1, 300ms, 0ms, 0);
    EXPECT_FALSE(r.leader);
    EXPECT_EQ(r.holder, std::optional<std::string>("other"));
}

TEST(ElectionRound, ReplicasMustAcknowledge) {
    EXPECT_FALSE(judge_round(ours(5), t0, t0 + 1ms, 0, 300ms, 5ms, 1).leader);
    EXPECT_TRUE(judge_round(ours(5), t0, t0 + 1ms, 1, 300ms, 5ms, 1).leader);
    EXPECT_FALSE(judge_round(ours(5), t0, t0 + 1ms, 1, 300ms, 5ms, 2).leader);
    EXPECT_TRUE(judge_round(ours(5), t0, t0 + 1ms, 3, 300ms, 5ms, 2).leader);
    EXPECT_FALSE(judge_round(ours(5), t0, t0 + 1ms, -1, 300ms, 5ms, 2).leader);
    EXPECT_EQ(judge_round(ours(5), t0, t0 + 1ms, 1, 300ms, 5ms, 2).acks, 1);
    // Without replicas WAIT's count means nothing.
    EXPECT_EQ(judge_round(ours(5), t0, t0 + 1ms, 3, 300ms, 5ms, 0).acks, -1);
}

TEST(ElectionRound, LeaseIsOverExactlyAtItsEnd) {
    EXPECT_FALSE(detail::lease_over(t0, t0 - 1ns));
    EXPECT_TRUE(detail::lease_over(t0, t0));
    EXPECT_TRUE(detail::lease_over(t0, t0 + 1ns));
}
