// The acquire script's bounded unfairness and re-lock (lock/src/scripts.hpp) on a real server,
// called directly: the turn key, the waiting key, yielding, and the renewal in place of a
// held-back release (mark kept, fencing floor raised).
#include "scripts.hpp"

#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

#include <string>
#include <thread>

using namespace std::chrono_literals;
using redcoord::reply;
using redcoord::detail::acquire_script;
using redcoord::detail::release_script;
using redcoord::testing::local_server;

namespace {

const std::string key = "t:lock:{r}", fence = "t:lock:{r}:fence", turn = "t:lock:{r}:turn",
                  waiting = "t:lock:{r}:waiting";

// One attempt: owner `owner` with `token`, turn 100 ms, grace 50 ms.
reply attempt(const local_server& s, const std::string& owner, const std::string& token,
              const std::string& mode = "1", const std::string& previous = "",
              const std::string& floor = "0", const std::string& registered = "0",
              const std::string& tombstones = "0") {
    return s.command({"EVAL", acquire_script().source(), "4", key, fence, turn, waiting, token,
                      "30000", mode, owner, "100", "50", previous, floor, registered, tombstones});
}

bool granted(const reply& r) { return r.is_integer() && r.integer() > 0; }

}  // namespace

TEST(LockFairnessScript, AWaiterIsNamedAndToldTheHoldersTurn) {
    local_server s;
    ASSERT_TRUE(granted(attempt(s, "A", "a1")));
    const auto r = attempt(s, "B", "b1");
    ASSERT_FALSE(r.is_integer());
    const auto& e = r.elements();
    ASSERT_EQ(e.size(), 5u);
    EXPECT_GT(e[3].integer(), 0);  // the holder's turn left, in ms
    EXPECT_LE(e[3].integer(), 100);
    EXPECT_EQ(e[4].integer(), 0);  // not yielding
    EXPECT_EQ(s.command({"GET", waiting}).text(), "B");
    const auto wpttl = s.command({"PTTL", waiting}).integer();
    EXPECT_GT(wpttl, 50);  // turn left + grace
    EXPECT_LE(wpttl, 150);
    EXPECT_EQ(s.command({"GET", key}).text(), "a1");              // the holder's value is untouched
    EXPECT_EQ(s.command({"GET", key + ":notice"}).text(), "a1");  // its release publishes
}

TEST(LockFairnessScript, WithinItsTurnTheOwnerReacquiresThenItYields) {
    local_server s;
    ASSERT_TRUE(granted(attempt(s, "A", "a1")));
    (void)attempt(s, "B", "b1");  // B waits
    s.command({"DEL", key});      // A released
    ASSERT_TRUE(granted(attempt(s, "A", "a2"))) << "within its turn the owner may re-acquire";
    s.command({"DEL", key});
    std::this_thread::sleep_for(120ms);  // the turn (100 ms) is over
    (void)attempt(s, "B", "b1");         // B still waits (the lock is free now: B takes it)
    s.command({"DEL", key});
    ASSERT_TRUE(s.command({"SET", waiting, "B", "PX", "50"}).text() == "OK");
    // B took it and released (a new turn for B); make A the owner again whose turn is over.
    s.command({"SET", turn, "A", "PX", "40"});  // A's turn over (PTTL <= grace)
    const auto r = attempt(s, "A", "a3");
    ASSERT_FALSE(r.is_integer());
    EXPECT_EQ(r.elements()[1].integer(), -2);  // the lock is free...
    EXPECT_EQ(r.elements()[4].integer(), 1);   // ...but A yields to B
    EXPECT_EQ(s.command({"EXISTS", key}).integer(), 0);
    // The short reply says "held, 1 ms" rather than "free".
    EXPECT_EQ(attempt(s, "A", "a4", "-").integer(), -3);
    // B gets it, and starts its own turn.
    EXPECT_TRUE(granted(attempt(s, "B", "b2", "1", "", "0", "1")));
    EXPECT_EQ(s.command({"GET", turn}).text(), "B");
    EXPECT_EQ(s.command({"EXISTS", waiting}).integer(), 0);  // B no longer waits
}

TEST(LockFairnessScript, AWaiterThatDiedStopsTheYieldWhenItsEntryLapses) {
    local_server s;
    s.command({"SET", turn, "A", "PX", "40"});         // A's turn is over
    s.command({"SET", waiting, "ghost", "PX", "30"});  // a waiter that will not come back
    EXPECT_FALSE(granted(attempt(s, "A", "a1")));      // yields while the entry lives
    std::this_thread::sleep_for(40ms);
    EXPECT_TRUE(granted(attempt(s, "A", "a2")));  // lapsed: A goes on
}

TEST(LockFairnessScript, AReLockRenewsInPlaceKeepingTheNoticeAndRaisingTheFloor) {
    local_server s;
    const auto f1 = attempt(s, "A", "a1");
    ASSERT_TRUE(granted(f1));
    (void)attempt(s, "B", "b1");  // asks for a1's release notice
    ASSERT_EQ(s.command({"GET", key + ":notice"}).text(), "a1");
    // Re-lock with a floor above the counter (a Redlock whose majority stood lower).
    const auto f2 = attempt(s, "A", "a2", "1", "a1", std::to_string(f1.integer() + 1000));
    ASSERT_TRUE(granted(f2));
    EXPECT_GT(f2.integer(), f1.integer() + 1000);
    EXPECT_EQ(s.command({"GET", key}).text(), "a2");              // new token
    EXPECT_EQ(s.command({"GET", key + ":notice"}).text(), "a2");  // the waiter's notice kept
    EXPECT_GT(s.command({"PTTL", key}).integer(), 29000);
    // A previous token that is no longer there (expired, taken over) is a plain attempt.
    EXPECT_FALSE(granted(attempt(s, "C", "c1", "1", "gone")));
}

TEST(LockFairnessScript, AReLockThatMustYieldReleasesAndPublishes) {
    local_server s;
    ASSERT_TRUE(granted(attempt(s, "A", "a1")));
    (void)attempt(s, "B", "b1");                // B waits and asked for a1's notice
    s.command({"SET", turn, "A", "PX", "40"});  // A's turn is over
    const auto publishes0 = s.command_calls("publish");
    const auto r = attempt(s, "A", "a2", "1", "a1");
    ASSERT_FALSE(r.is_integer());
    EXPECT_EQ(r.elements()[4].integer(), 1);                // yielding
    EXPECT_EQ(s.command({"EXISTS", key}).integer(), 0);     // the held-back release happened
    EXPECT_EQ(s.command_calls("publish") - publishes0, 1);  // and woke the waiter
}

TEST(LockFairnessScript, AHeldBackReleaseRaisesTheFloorWhateverTheAttemptDoes) {
    // Redlock: the held-back release of a holding whose token stood on too few nodes must
    // raise this node's counter as release() would, also when the re-lock yields or the key
    // is someone else's; otherwise the next holder's token could be lower (a stale write).
    local_server s;
    ASSERT_TRUE(granted(attempt(s, "A", "a1")));
    (void)attempt(s, "B", "b1");
    s.command({"SET", turn, "A", "PX", "40"});  // A's turn is over: the re-lock yields
    const auto base = std::stoll(s.command({"GET", fence}).text());
    const auto floor1 = std::to_string(base + 1000), floor2 = std::to_string(base + 2000);
    const auto r = attempt(s, "A", "a2", "1", "a1", floor1);
    ASSERT_FALSE(r.is_integer());
    EXPECT_EQ(r.elements()[4].integer(), 1);  // it did yield
    EXPECT_EQ(s.command({"GET", fence}).text(), floor1);
    // Someone else's key: the floor goes up all the same.
    ASSERT_TRUE(granted(attempt(s, "B", "b2", "1", "", "0", "1")));
    (void)attempt(s, "A", "a3", "1", "gone", floor2);
    EXPECT_EQ(s.command({"GET", fence}).text(), floor2);
    // The next acquisition is above it.
    s.command({"DEL", key});
    const auto f = attempt(s, "C", "c1");
    ASSERT_TRUE(granted(f));
    EXPECT_GT(f.integer(), base + 2000);
}

TEST(LockFairnessScript, AnAttemptOvertakenByItsReleaseTakesNothing) {
    // Redlock: the acquire of "a1" is still in flight to this node when its release arrives
    // on another connection. The release leaves a tombstone; the late acquire takes nothing.
    local_server s;
    EXPECT_EQ(
        s.command({"EVAL", release_script().source(), "2", key, fence, "a1", "0", "30000", "30000"})
            .integer(),
        0);
    EXPECT_GT(s.command({"PTTL", key + ":gone:a1"}).integer(), 29000);
    EXPECT_FALSE(granted(attempt(s, "A", "a1", "1", "", "0", "0", "1")));
    EXPECT_EQ(attempt(s, "A", "a1", "-", "", "0", "0", "1").integer(), -1);
    EXPECT_EQ(s.command({"EXISTS", key}).integer(), 0);
    // Another token is not affected, and a release that deletes its key leaves no tombstone.
    ASSERT_TRUE(granted(attempt(s, "A", "a2", "1", "", "0", "0", "1")));
    EXPECT_EQ(
        s.command({"EVAL", release_script().source(), "2", key, fence, "a2", "0", "30000", "30000"})
            .integer(),
        1);
    EXPECT_EQ(s.command({"EXISTS", key + ":gone:a2"}).integer(), 0);
    // A re-lock whose new token was released already lets the held-back holding go.
    ASSERT_TRUE(granted(attempt(s, "A", "a3", "1", "", "0", "0", "1")));
    (void)s.command(
        {"EVAL", release_script().source(), "2", key, fence, "a4", "0", "30000", "30000"});
    EXPECT_FALSE(granted(attempt(s, "A", "a4", "1", "a3", "0", "0", "1")));
    EXPECT_EQ(s.command({"EXISTS", key}).integer(), 0);
}
