// The hub's duplicate filter (detail::dedup_window), pure: review findings S4 and S5.
#include <redcoord/core/errors.hpp>
#include <redcoord/signaling/envelope.hpp>

#include <gtest/gtest.h>

#include <string>

using namespace redcoord::detail;

namespace {

// The 16-byte id of message `seq` of hub `origin`, as it travels in an envelope.
std::string id_of(std::uint64_t origin, std::uint64_t seq) {
    return envelope_header(origin, seq).substr(envelope_magic.size());
}

TEST(Dedup, DropsTheSecondCopyOfOneDelivery) {
    dedup_window w(8);
    EXPECT_TRUE(w.first_copy(id_of(1, 1), "c", ""));
    EXPECT_FALSE(w.first_copy(id_of(1, 1), "c", ""));
    // A channel delivery and a pattern delivery of one PUBLISH are distinct.
    EXPECT_TRUE(w.first_copy(id_of(1, 1), "c", "c*"));
    EXPECT_FALSE(w.first_copy(id_of(1, 1), "c", "c*"));
}

TEST(Dedup, S4_OneEnvelopeOnTwoChannelsIsTwoDeliveries) {
    // A user script PUBLISHes one signal_hub::envelope() to two channels: both must arrive.
    dedup_window w(8);
    EXPECT_TRUE(w.first_copy(id_of(7, 1), "a", ""));
    EXPECT_TRUE(w.first_copy(id_of(7, 1), "b", ""));
    EXPECT_FALSE(w.first_copy(id_of(7, 1), "b", ""));  // b's replica copy
    EXPECT_FALSE(w.first_copy(id_of(7, 1), "a", ""));  // a's replica copy
}

TEST(Dedup, S5_ReplayedBurstBeyondTheCountWindowIsDropped) {
    // A replica that partially resyncs replays its backlog: copies arrive late, in a burst
    // larger than the window. None of them may be delivered a second time.
    constexpr std::uint64_t n = 100;
    dedup_window w(16);
    for (std::uint64_t s = 1; s <= n; ++s) ASSERT_TRUE(w.first_copy(id_of(3, s), "c", "")) << s;
    int again = 0;
    for (std::uint64_t s = 1; s <= n; ++s) again += w.first_copy(id_of(3, s), "c", "") ? 1 : 0;
    EXPECT_EQ(again, 0) << "replayed copies delivered twice";
    // Other publishers are not affected by origin 3's history.
    EXPECT_TRUE(w.first_copy(id_of(4, 1), "c", ""));
    // New signals of origin 3 still pass, also slightly out of order within the window.
    EXPECT_TRUE(w.first_copy(id_of(3, n + 2), "c", ""));
    EXPECT_TRUE(w.first_copy(id_of(3, n + 1), "c", ""));
}

TEST(Dedup, S5_OriginsAreForgottenOldestFirstBeyondTheirBound) {
    dedup_window w(2, 2);
    for (std::uint64_t o = 1; o <= 3; ++o)
        for (std::uint64_t s = 1; s <= 4; ++s) ASSERT_TRUE(w.first_copy(id_of(o, s), "c", ""));
    EXPECT_LE(w.origins(), 2u);
}

TEST(Dedup, RejectsAnEmptyWindow) { EXPECT_THROW(dedup_window(0), redcoord::invalid_argument); }

}  // namespace
