// The checkers must pass correct histories and catch each rule broken on purpose: a checker
// that cannot fail proves nothing.

#include <redcoord/testing/history.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <unistd.h>

using namespace redcoord::testing::history;

namespace {

event ev(std::string client, std::string op, std::int64_t start, std::int64_t end, bool ok = true,
         std::uint64_t token = 0, std::uint64_t seq = 0, std::string id = {}) {
    return {std::move(client), std::move(op), start, end, ok, token, seq, std::move(id)};
}

bool has_rule(const std::vector<violation>& v, const std::string& rule) {
    for (const auto& x : v)
        if (x.rule == rule) return true;
    return false;
}

std::string rules(const std::vector<violation>& v) {
    std::string s;
    for (const auto& x : v) s += x.rule + ": " + x.what + "\n";
    return s;
}

}  // namespace

TEST(CheckLock, HandOversWithFencedWritesPass) {
    const std::vector<event> h{
        ev("a", "hold", 0, 100, true, 1),   ev("a", "write", 10, 20, true, 1, 1),
        ev("b", "hold", 150, 300, true, 2), ev("b", "write", 160, 170, true, 2, 2),
        ev("a", "hold", 310, 400, true, 3), ev("a", "write", 320, 330, true, 3, 3),
        ev("c", "hold", 50, 60, false),  // a failed attempt holds nothing
    };
    EXPECT_TRUE(check_lock(h).empty()) << rules(check_lock(h));
}

TEST(CheckLock, OverlappingHoldingsOfTwoClientsBreakMutualExclusion) {
    const std::vector<event> h{ev("a", "hold", 0, 100, true, 1), ev("b", "hold", 90, 200, true, 2)};
    EXPECT_TRUE(has_rule(check_lock(h), "mutual exclusion")) << rules(check_lock(h));
    // The same client's back-to-back holdings are not a conflict.
    const std::vector<event> same{ev("a", "hold", 0, 100, true, 1),
                                  ev("a", "hold", 100, 200, true, 2)};
    EXPECT_TRUE(check_lock(same).empty());
}

TEST(CheckLock, HoldingsThatMeetAtAnInstantDoNotOverlapButOneInsideAnotherDoes) {
    // c begins exactly when a ends (a release, then the next acquire); b falls inside c.
    const std::vector<event> h{ev("a", "hold", 0, 1000, true, 1),
                               ev("c", "hold", 1000, 2000, true, 2),
                               ev("b", "hold", 1500, 1600, true, 3)};
    const auto v = check_lock(h);
    ASSERT_EQ(v.size(), 1u) << rules(v);
    EXPECT_EQ(v[0].rule, "mutual exclusion");
    EXPECT_NE(v[0].what.find("c hold"), std::string::npos) << v[0].what;
    EXPECT_NE(v[0].what.find("b hold"), std::string::npos) << v[0].what;
}

TEST(CheckLock, TokensThatDoNotIncreaseAreCaught) {
    const std::vector<event> h{ev("a", "hold", 0, 100, true, 5),
                               ev("b", "hold", 200, 300, true, 5)};
    EXPECT_TRUE(has_rule(check_lock(h), "fencing tokens increase"));
}

TEST(CheckLock, AStaleWriteAcceptedIsCaughtAndOneRejectedIsFine) {
    // a was paused past its TTL; b took over and wrote with 2; a's late write with 1 arrives.
    std::vector<event> h{ev("a", "hold", 0, 100, true, 1), ev("b", "hold", 150, 300, true, 2),
                         ev("b", "write", 160, 170, true, 2, 1),
                         ev("a", "write", 40, 180, false, 1, 2)};
    EXPECT_TRUE(check_lock(h).empty()) << rules(check_lock(h));
    h.back().ok = true;  // the resource forgot to check
    const auto v = check_lock(h);
    EXPECT_TRUE(has_rule(v, "stale write rejected")) << rules(v);
    EXPECT_TRUE(has_rule(v, "fenced writes increase")) << rules(v);
}

TEST(CheckElection, OneLeaderAtATimeWithIncreasingEpochsPasses) {
    const std::vector<event> h{ev("n1", "term", 0, 1000, true, 10),
                               ev("n1", "work", 100, 200, true, 10, 1),
                               ev("n1", "work", 300, 400, true, 10, 2),
                               ev("n2", "term", 1200, 2000, true, 11),
                               ev("n2", "work", 1300, 1400, true, 11, 3),
                               ev("n1", "work", 1350, 1450, false, 10, 4)};  // rejected: not judged
    EXPECT_TRUE(check_election(h).empty()) << rules(check_election(h));
}

TEST(CheckElection, TwoLeadersAtOnceAndEpochsGoingBackAreCaught) {
    const std::vector<event> h{
        ev("n1", "term", 0, 1000, true, 10), ev("n2", "term", 500, 1500, true, 10),
        ev("n1", "work", 600, 700, true, 10, 2), ev("n2", "work", 650, 750, true, 9, 3)};
    const auto v = check_election(h);
    EXPECT_TRUE(has_rule(v, "one leader at a time")) << rules(v);
    EXPECT_TRUE(has_rule(v, "epochs increase")) << rules(v);
    EXPECT_TRUE(has_rule(v, "accepted epochs never decrease")) << rules(v);
    EXPECT_TRUE(has_rule(v, "work only while leading")) << rules(v);  // n2's work with epoch 9
}

TEST(CheckElection, WorkAcceptedAfterItsTermEndedIsCaught) {
    // n1 was paused past its deadline and wrote on resuming; the resource had no newer epoch.
    const std::vector<event> h{ev("n1", "term", 0, 1000, true, 10),
                               ev("n1", "work", 1500, 1600, true, 10, 1)};
    EXPECT_TRUE(has_rule(check_election(h), "work only while leading"));
}

TEST(CheckQueue, EveryMessageAckedOnceOrLeftPasses) {
    const std::vector<event> h{ev("p", "push", 0, 1, true, 0, 0, "m1"),
                               ev("p", "push", 0, 1, true, 0, 0, "m2"),
                               ev("p", "push", 0, 1, true, 0, 0, "m3"),
                               ev("c1", "deliver", 2, 3, true, 0, 0, "m1"),
                               ev("c1", "ack", 4, 5, true, 0, 0, "m1"),
                               ev("c2", "deliver", 2, 3, true, 0, 0, "m2"),
                               ev("c2", "killed", 4, 4),
                               ev("c1", "deliver", 50, 51, true, 0, 0, "m2"),
                               ev("c1", "ack", 52, 53, true, 0, 0, "m2"),
                               ev("x", "left", 99, 99, true, 0, 0, "m3")};
    EXPECT_TRUE(check_queue(h).empty()) << rules(check_queue(h));
}

TEST(CheckQueue, ALostMessageADoubleAckAndAFaultlessDuplicateAreCaught) {
    const std::vector<event> lost{ev("p", "push", 0, 1, true, 0, 0, "m1")};
    EXPECT_TRUE(has_rule(check_queue(lost), "nothing lost"));
    // A push that failed may be absent.
    EXPECT_TRUE(check_queue({ev("p", "push", 0, 1, false, 0, 0, "m1")}).empty());

    const std::vector<event> twice{
        ev("p", "push", 0, 1, true, 0, 0, "m1"), ev("c1", "deliver", 2, 3, true, 0, 0, "m1"),
        ev("c1", "ack", 4, 5, true, 0, 0, "m1"), ev("c2", "deliver", 6, 7, true, 0, 0, "m1"),
        ev("c2", "ack", 8, 9, true, 0, 0, "m1")};
    const auto v = check_queue(twice);
    EXPECT_TRUE(has_rule(v, "acked once")) << rules(v);
    EXPECT_TRUE(has_rule(v, "duplicates only from faults")) << rules(v);
    // A nack in between explains the second delivery.
    const std::vector<event> nacked{
        ev("p", "push", 0, 1, true, 0, 0, "m1"), ev("c1", "deliver", 2, 3, true, 0, 0, "m1"),
        ev("c1", "nack", 4, 5, true, 0, 0, "m1"), ev("c2", "deliver", 6, 7, true, 0, 0, "m1"),
        ev("c2", "ack", 8, 9, true, 0, 0, "m1")};
    EXPECT_TRUE(check_queue(nacked).empty()) << rules(check_queue(nacked));
    EXPECT_TRUE(has_rule(check_queue({ev("c", "deliver", 0, 1, true, 0, 0, "ghost")}),
                         "delivered only what was pushed"));
}

// A consumer cut off while acking, or a producer while pushing, never learns what the server
// did: the ack may have removed the message, the push may have stored it. Neither is a
// violation; a confirmed double ack still is.
TEST(CheckQueue, RepliesLostToAFaultExcuseWhatTheyMayHaveDoneAndNoMore) {
    const std::vector<event> h{
        ev("p", "push", 0, 1, true, 0, 0, "m1"),     ev("c1", "deliver", 2, 3, true, 0, 0, "m1"),
        ev("c1", "ack", 4, 5, false, 0, 0, "m1"),  // reply lost
        ev("p", "push", 6, 7, false, 0, 0, "m2"),  // reply lost
        ev("c2", "deliver", 8, 9, true, 0, 0, "m2"), ev("c2", "ack", 10, 11, true, 0, 0, "m2")};
    EXPECT_TRUE(check_queue(h).empty()) << rules(check_queue(h));
    auto twice = h;
    twice.push_back(ev("c3", "deliver", 12, 13, true, 0, 0, "m2"));
    twice.push_back(ev("c3", "ack", 14, 15, true, 0, 0, "m2"));
    const auto v = check_queue(twice);
    EXPECT_TRUE(has_rule(v, "acked once")) << rules(v);
    EXPECT_TRUE(has_rule(v, "duplicates only from faults")) << rules(v);
    // An unknown ack of another message excuses nothing.
    EXPECT_TRUE(has_rule(check_queue({ev("p", "push", 0, 1, true, 0, 0, "m1"),
                                      ev("c1", "ack", 4, 5, false, 0, 0, "m9")}),
                         "nothing lost"));
}

// c0's pop moved m1 and c0 was paused before it read the reply; its lease lapsed, c1 got m1
// and acked it, and only then did c0's pop return. Completion order puts c1 first, but the
// server's order was c0 first, and c0's pause explains the redelivery.
TEST(CheckQueue, ARedeliveryIsJudgedInTheServersPossibleOrderNotInCompletionOrder) {
    std::vector<event> h{ev("p", "push", 0, 1, true, 0, 0, "m1"),
                         ev("c0", "deliver", 10, 100, true, 0, 0, "m1"), ev("c0", "paused", 11, 90),
                         ev("c1", "deliver", 50, 52, true, 0, 0, "m1"),
                         ev("c1", "ack", 53, 54, true, 0, 0, "m1")};
    EXPECT_TRUE(check_queue(h).empty()) << rules(check_queue(h));
    // Without the pause no order explains it.
    h.erase(h.begin() + 2);
    EXPECT_TRUE(has_rule(check_queue(h), "duplicates only from faults"));
    // Nor when c0's pop surely came after c1's (it began after c1's ended).
    h = {ev("p", "push", 0, 1, true, 0, 0, "m1"), ev("c1", "deliver", 50, 52, true, 0, 0, "m1"),
         ev("c0", "paused", 60, 90), ev("c0", "deliver", 55, 100, true, 0, 0, "m1")};
    EXPECT_TRUE(has_rule(check_queue(h), "duplicates only from faults"));
}

// A cut is logged from when the schedule began to apply it, a few ms before the link really
// goes (two `ip` calls): c0's pop could still complete in between, and then its heartbeats
// could not, so c1 recovered m1 a lease later. Seen in a long run (queue/cut-or-paused, seed
// 6). A cut that was over before c0's pop began explains nothing.
TEST(CheckQueue, ACutLoggedJustBeforeADeliveryThatStillGotThroughExplainsTheRedelivery) {
    std::vector<event> h{ev("p", "push", 0, 1, true, 0, 0, "m1"), ev("c0", "cut", 9, 600),
                         ev("c0", "deliver", 10, 11, true, 0, 0, "m1"),
                         ev("c1", "deliver", 520, 521, true, 0, 0, "m1"),
                         ev("c1", "ack", 530, 531, true, 0, 0, "m1")};
    EXPECT_TRUE(check_queue(h).empty()) << rules(check_queue(h));
    h[1] = ev("c0", "cut", 2, 8);
    EXPECT_TRUE(has_rule(check_queue(h), "duplicates only from faults"));
    // A nack explains only a redelivery after it, as before.
    h[1] = ev("c0", "nack", 5, 9, true, 0, 0, "m1");
    EXPECT_TRUE(has_rule(check_queue(h), "duplicates only from faults"));
}

TEST(CheckJobResults, OnlyTheLastAttemptsResultAndNoFailedJobPass) {
    using redcoord::testing::history::check_job_results;
    using redcoord::testing::history::job_end_state;
    std::vector<job_end_state> jobs{{"a", "completed", 2, "c1:2", ""},
                                    {"b", "waiting", 0, "", ""},
                                    {"c", "active", 3, "", ""},
                                    {"d", "completed", 12, "c0:12", ""}};
    EXPECT_TRUE(check_job_results(jobs).empty()) << rules(check_job_results(jobs));
    // A late completion of attempt 1 accepted after attempt 2 ran (its worker was cut off).
    jobs.push_back({"e", "completed", 2, "c0:1", ""});
    EXPECT_TRUE(has_rule(check_job_results(jobs), "the result is the last attempt's"));
    jobs.back() = {"e", "completed", 1, "c0:11", ""};  // the number must match, not its end
    EXPECT_TRUE(has_rule(check_job_results(jobs), "the result is the last attempt's"));
    jobs.back() = {"e", "dead", 1000, "", "no result"};
    EXPECT_TRUE(has_rule(check_job_results(jobs), "no job failed"));
}

TEST(CheckSignaling, SignalsSentWhileTheLinkWasUpArriveOnce) {
    const std::vector<event> h{
        ev("w1", "link", 0, 100), ev("w1", "link", 200, 300),
        ev("s", "signal", 10, 20, true, 0, 0, "a"),
        ev("s", "signal", 150, 160, true, 0, 0, "b"),  // sent while w1 was down: may be missed
        ev("w1", "receive", 0, 21, true, 0, 0, "a")};
    EXPECT_TRUE(check_signaling(h).empty()) << rules(check_signaling(h));
    auto missed = h;
    missed.pop_back();
    EXPECT_TRUE(has_rule(check_signaling(missed), "every signal received while the link was up"));
    auto twice = h;
    twice.push_back(ev("w1", "receive", 0, 22, true, 0, 0, "a"));
    EXPECT_TRUE(has_rule(check_signaling(twice), "received once"));
}

TEST(CheckSignaling, ABarrierReleasedBeforeEveryPartyArrivedIsCaught) {
    const std::vector<event> good{ev("p1", "arrive", 0, 1, true, 0),
                                  ev("p2", "arrive", 5, 6, true, 0),
                                  ev("p1", "pass", 0, 7, true, 0), ev("p2", "pass", 5, 7, true, 0)};
    EXPECT_TRUE(check_signaling(good, 2).empty()) << rules(check_signaling(good, 2));
    const std::vector<event> early{ev("p1", "arrive", 0, 1, true, 0),
                                   ev("p1", "pass", 0, 3, true, 0),
                                   ev("p2", "arrive", 5, 6, true, 0)};
    EXPECT_TRUE(has_rule(check_signaling(early, 2), "barrier never releases early"));
}

TEST(HistoryLog, LinesRoundTripAndACutLineIsSkipped) {
    const std::string path = "/tmp/redcoord-history-" + std::to_string(::getpid()) + ".log";
    const event a = ev("client-1", "write", 100, 250, true, 1795698163114041, 7, "");
    const event b = ev("c2", "deliver", -5, 3, false, 0, 0, "0123abcd");
    {
        std::ofstream out(path);
        out << to_log_line(a) << to_log_line(b) << "c3\thold\t12";  // killed mid-line
    }
    std::size_t skipped = 0;
    const auto h = read_log(path, &skipped);
    std::remove(path.c_str());
    ASSERT_EQ(h.size(), 2u);
    EXPECT_EQ(skipped, 1u);
    EXPECT_EQ(describe(h[0]), describe(a));
    EXPECT_EQ(describe(h[1]), describe(b));
    EXPECT_GT(monotonic_ns(), 0);
}

TEST(CheckSemaphore, HoldingsWithinNAndEarlyReleasesPass) {
    // Two permits: a and b hold one each; c takes a's after a released it, before a's lease
    // would have ended.
    const std::vector<event> h{
        ev("a", "hold", 0, 300, true, 1),           ev("b", "hold", 10, 300, true, 2),
        ev("a", "release", 100, 100, true, 1),      ev("c", "hold", 120, 400, true, 3),
        ev("d", "hold", 300, 500, true, 4, 0, "2"), ev("c", "release", 300, 300, true, 3),
    };
    EXPECT_TRUE(check_semaphore(h, 2).empty()) << rules(check_semaphore(h, 2));
}

TEST(CheckSemaphore, AKilledHoldersLeaseCountsUntilItEnds) {
    // a never released (killed): its permit counts until 300, so c's at 120 is the third.
    const std::vector<event> h{ev("a", "hold", 0, 300, true, 1), ev("b", "hold", 10, 300, true, 2),
                               ev("c", "hold", 120, 400, true, 3)};
    EXPECT_TRUE(has_rule(check_semaphore(h, 2), "at most N permits"));
    EXPECT_TRUE(check_semaphore(h, 3).empty());
    // Several permits in one acquisition count as several.
    const std::vector<event> multi{ev("a", "hold", 0, 300, true, 1, 0, "2"),
                                   ev("b", "hold", 10, 300, true, 2)};
    EXPECT_TRUE(has_rule(check_semaphore(multi, 2), "at most N permits"));
}

TEST(CheckSemaphore, ATokenGrantedTwiceIsCaught) {
    const std::vector<event> h{ev("a", "hold", 0, 100, true, 7),
                               ev("b", "hold", 200, 300, true, 7)};
    EXPECT_TRUE(has_rule(check_semaphore(h, 5), "fencing tokens unique"));
}

TEST(CheckRwLock, ReadersShareAndWritersAreAlone) {
    const std::vector<event> ok{
        ev("a", "hold", 0, 100, true, 1, 0, "read"),
        ev("b", "hold", 10, 120, true, 2, 0, "read"),
        ev("c", "hold", 130, 300, true, 3, 0, "write"),
        ev("c", "release", 200, 200, true, 3),
        ev("a", "hold", 210, 300, true, 4, 0, "read"),
    };
    EXPECT_TRUE(check_rw_lock(ok).empty()) << rules(check_rw_lock(ok));
    const std::vector<event> reader_in{ev("c", "hold", 130, 300, true, 3, 0, "write"),
                                       ev("a", "hold", 210, 300, true, 4, 0, "read")};
    EXPECT_TRUE(has_rule(check_rw_lock(reader_in), "writer alone"));
    const std::vector<event> two_writers{ev("c", "hold", 130, 300, true, 3, 0, "write"),
                                         ev("d", "hold", 100, 140, true, 2, 0, "write")};
    const auto v = check_rw_lock(two_writers);
    EXPECT_EQ(v.size(), 1u) << rules(v);  // one pair, reported once
}

TEST(CheckRate, TheGcraBoundPassesAndOneMoreIsCaught) {
    // 10/s, burst 3: three at once, then one every 100 ms.
    std::vector<event> h;
    const std::int64_t ms = 1'000'000;
    for (int i = 0; i < 3; ++i) h.push_back(ev("a", "request", 0, ms));
    for (int i = 1; i <= 20; ++i) h.push_back(ev("b", "request", i * 100 * ms, i * 100 * ms + ms));
    h.push_back(ev("c", "request", 50 * ms, 51 * ms, false));  // refused: not counted
    EXPECT_TRUE(check_rate(h, 10, 3).empty()) << rules(check_rate(h, 10, 3));
    h.push_back(ev("c", "request", 500 * ms, 501 * ms));  // one more inside
    EXPECT_TRUE(has_rule(check_rate(h, 10, 3), "within the rate"));
    // A request's cost is its token.
    const std::vector<event> costly{ev("a", "request", 0, ms, true, 4)};
    EXPECT_TRUE(has_rule(check_rate(costly, 10, 3), "within the rate"));
}
