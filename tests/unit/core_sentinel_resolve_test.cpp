// The Sentinel resolver's engine (core/src/sentinel_resolve.hpp) without a server: master()'s
// wait decisions, rounds of votes from 3 and 5 sentinels in every arrangement (with losses
// and late answers), suspects, the promoted-replica fallback, back-off, notifications and the
// role check. Fake clock, no sleeps.
#include "sentinel_resolve.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <vector>

using namespace redcoord;
using namespace redcoord::detail;
using namespace std::chrono_literals;
using step = sentinel_resolve::step::kind;
using verdict = sentinel_resolve::verdict::kind;
using time_point = sentinel_resolve::time_point;

namespace {

const time_point t0 = time_point{} + std::chrono::hours(1000);
const host_port A{"10.0.0.1", 6379}, B{"10.0.0.2", 6379}, C{"10.0.0.3", 6379}, P{"10.0.0.9", 6379};

std::vector<host_port> sentinels(std::size_t n) {
    std::vector<host_port> out;
    for (std::size_t i = 0; i < n; ++i) out.push_back({"10.0.1." + std::to_string(i + 1), 26379});
    return out;
}

sentinel_resolve make(std::size_t n = 3) {
    return sentinel_resolve({10ms, 100ms, 1000ms}, sentinels(n), "redis-sentinel://s/mymaster",
                            "mymaster");
}

master_answer vote(const host_port& hp) {
    master_answer a;
    a.what = master_answer::kind::master;
    a.addr = hp;
    return a;
}
master_answer nil_answer() {
    master_answer a;
    a.what = master_answer::kind::unknown;
    return a;
}
master_answer lost() {
    return unreachable_answer("timed out");
}  // lost, or late past the round's deadline
master_answer refused(std::string text) {
    master_answer a;
    a.what = master_answer::kind::refused;
    a.auth = is_auth_text(text);
    a.text = std::move(text);
    return a;
}

// Runs one round at `now` with `answers`; returns its verdict (asks for promoted replicas
// with `promoted` when the engine wants them).
sentinel_resolve::verdict round(sentinel_resolve& r, time_point now,
                                std::vector<master_answer> answers,
                                std::vector<host_port> promoted = {}) {
    const auto s = r.next(now, now + 1s);
    EXPECT_EQ(s.what, step::ask);
    auto v = r.answers(answers, now);
    if (v.what == verdict::need_promoted) v = r.promoted(promoted, now);
    return v;
}

}  // namespace

TEST(SentinelResolve, CachedMasterIsUsedWithoutARound) {
    auto r = make();
    auto v = round(r, t0, {vote(A), vote(A), vote(A)});
    ASSERT_EQ(v.what, verdict::chosen);
    EXPECT_EQ(v.addr, A);
    EXPECT_FALSE(v.change);  // the first resolution is not a switch
    const auto s = r.next(t0 + 1ms, t0 + 1ms);
    EXPECT_EQ(s.what, step::use);
    EXPECT_EQ(s.addr, A);
    EXPECT_EQ(r.rounds(), 1u);
}

TEST(SentinelResolve, OneRoundAtATimeOthersWaitForItUntilTheirDeadline) {
    auto r = make();
    EXPECT_EQ(r.next(t0, t0 + 500ms).what, step::ask);
    auto s = r.next(t0 + 1ms, t0 + 200ms);
    EXPECT_EQ(s.what, step::wait);
    EXPECT_EQ(s.until, t0 + 200ms);  // woken earlier by the round's end
    EXPECT_EQ(r.next(t0 + 200ms, t0 + 200ms).what, step::round_timeout);
    EXPECT_EQ(r.rounds(), 1u);
    (void)r.answers(std::vector<master_answer>{vote(A), vote(A), lost()}, t0 + 210ms);
    EXPECT_EQ(r.next(t0 + 211ms, t0 + 200ms).what,
              step::use);  // even past its deadline: it is cached
}

TEST(SentinelResolve, FailedRoundsBackOffDoublingToTheMaximumAndAConfirmationResetsIt) {
    auto r = make();
    std::vector<std::chrono::milliseconds> pauses;
    auto now = t0;
    for (int i = 0; i < 6; ++i) {
        const auto v = round(r, now, {lost(), lost(), lost()});
        EXPECT_EQ(v.what, verdict::unreachable);
        pauses.push_back(r.backoff());
        // A caller arriving during the back-off waits for its end, or times out at its deadline.
        const auto s = r.next(now + 1ms, now + 1s);
        EXPECT_EQ(s.what, step::wait);
        EXPECT_EQ(s.until, now + r.backoff());
        EXPECT_EQ(r.next(now + 1ms, now + 1ms).what, step::backoff_timeout);
        now += r.backoff();
    }
    EXPECT_EQ(pauses,
              (std::vector<std::chrono::milliseconds>{10ms, 20ms, 40ms, 80ms, 100ms, 100ms}));
    EXPECT_NE(r.last_failure().find("no sentinel of redis-sentinel://s/mymaster answered"),
              std::string::npos);
    // A round that names a master still backs off (the master is not confirmed yet) ...
    auto v = round(r, now, {vote(A), vote(A), vote(A)});
    EXPECT_EQ(r.backoff(), 100ms);
    // ... until a connection to it is verified.
    r.confirm(A);
    EXPECT_EQ(r.backoff(), 0ms);
    EXPECT_EQ(r.next_round(), time_point{});
    r.report_failure(A, now);
    EXPECT_EQ(r.next(now, now + 1s).what, step::ask);  // no pause after a confirmed master
    (void)v;
}

TEST(SentinelResolve, ReportedFailureOfTheCachedMasterStartsANewRoundOthersDoNot) {
    auto r = make();
    (void)round(r, t0, {vote(A), vote(A), vote(A)});
    r.report_failure(B, t0 + 1ms);
    EXPECT_EQ(r.next(t0 + 2ms, t0 + 1s).what, step::use);
    r.report_failure(A, t0 + 3ms);
    const auto s = r.next(t0 + 4ms, t0 + 1s);
    EXPECT_EQ(s.what, step::wait);  // the back-off of the unconfirmed round first
    EXPECT_EQ(s.until, t0 + 10ms);
    EXPECT_EQ(r.next(t0 + 10ms, t0 + 1s).what, step::ask);
}

TEST(SentinelResolve, ErrorsWhenNoSentinelNamesAMaster) {
    {
        auto r = make();
        auto v = round(r, t0, {nil_answer(), lost(), nil_answer()});
        EXPECT_EQ(v.what, verdict::unknown_service);
        EXPECT_EQ(v.message,
                  "no sentinel of redis-sentinel://s/mymaster monitors a service named 'mymaster'");
    }
    {
        // Authentication refusals win over "unknown": the password is the problem to report.
        auto r = make();
        auto v = round(r, t0,
                       {nil_answer(), refused("WRONGPASS invalid username-password pair"), lost()});
        EXPECT_EQ(v.what, verdict::auth_refused);
    }
    {
        auto r = make();
        auto v = round(r, t0, {lost(), refused("ERR boom"), lost()});
        EXPECT_EQ(v.what, verdict::unreachable);
        EXPECT_NE(v.message.find("(last: sentinel 10.0.1.3:26379: timed out)"), std::string::npos)
            << v.message;
    }
    {
        // A sentinel whose pool is in reconnect back-off keeps the cause of its last failure.
        auto r = make();
        auto v =
            round(r, t0, {unreachable_answer("NOAUTH Authentication required"), lost(), lost()});
        EXPECT_EQ(v.what, verdict::auth_refused);
        v = round(r, t0 + 1s, {unreachable_answer("connect failed recently"), lost(), lost()});
        EXPECT_EQ(v.what, verdict::auth_refused);
        // Once it answers, the old cause is forgotten.
        v = round(r, t0 + 2s, {nil_answer(), lost(), lost()});
        EXPECT_EQ(v.what, verdict::unknown_service);
        v = round(r, t0 + 3s, {unreachable_answer("connect failed recently"), lost(), lost()});
        EXPECT_EQ(v.what, verdict::unreachable);
    }
}

TEST(SentinelResolve, MajorityIsChosenWhileSentinelsDisagreeEvenWhenSuspected) {
    auto r = make(5);
    r.report_failure(B, t0);
    auto v = round(r, t0 + 10ms, {vote(A), vote(B), vote(B), lost(), vote(B)});
    EXPECT_EQ(v.addr, B);
    // A tie goes to the address the earlier sentinel named.
    auto r2 = make(5);
    v = round(r2, t0, {vote(B), vote(A), vote(A), vote(B), lost()});
    EXPECT_EQ(v.addr, B);
}

TEST(SentinelResolve, C10_PromotedReplicaIsTriedWhileEveryNamedAddressFails) {
    auto r = make();
    (void)round(r, t0, {vote(A), vote(A), vote(A)});
    r.report_failure(A, t0 + 20ms);
    ASSERT_EQ(r.next(t0 + 30ms, t0 + 1s).what, step::ask);
    auto v = r.answers(std::vector<master_answer>{vote(A), vote(A), vote(A)}, t0 + 30ms);
    ASSERT_EQ(v.what, verdict::need_promoted);
    EXPECT_TRUE(r.resolving());  // the round goes on
    v = r.promoted(std::vector<host_port>{P}, t0 + 40ms);
    ASSERT_EQ(v.what, verdict::chosen);
    EXPECT_EQ(v.addr, P);
    ASSERT_TRUE(v.change);
    EXPECT_EQ(v.change->first, A);
    EXPECT_EQ(v.change->second, P);
    EXPECT_EQ(r.switches(), 1u);
    // No promoted replica: the failing address is all there is.
    auto r2 = make();
    r2.report_failure(A, t0);
    v = round(r2, t0 + 1ms, {vote(A), vote(A), lost()}, {});
    EXPECT_EQ(v.addr, A);
    // A suspect is forgotten after the window: no fallback query.
    auto r3 = make();
    r3.report_failure(A, t0);
    ASSERT_EQ(r3.next(t0 + 1000ms, t0 + 2s).what, step::ask);
    EXPECT_EQ(r3.answers(std::vector<master_answer>{vote(A), lost(), lost()}, t0 + 1000ms).what,
              verdict::chosen);
}

TEST(SentinelResolve, NotificationMovesTheMasterAtOnce) {
    auto r = make();
    (void)round(r, t0, {vote(A), vote(A), vote(A)});
    r.report_failure(B, t0);
    auto ch = r.announced(B);
    ASSERT_TRUE(ch);
    EXPECT_EQ(ch->second, B);
    EXPECT_EQ(r.switches(), 1u);
    EXPECT_EQ(r.backoff(), 0ms);
    EXPECT_FALSE(r.suspected_since(B, t0 + 1ms));
    const auto s = r.next(t0 + 1ms, t0 + 1ms);
    EXPECT_EQ(s.what, step::use);
    EXPECT_EQ(s.addr, B);
    EXPECT_FALSE(r.announced(B));  // the same address again: no change
    EXPECT_EQ(r.switches(), 1u);
}

TEST(SentinelResolve, RoleCheckAcceptsMastersAndUnknownRolesOnlyFromAMajority) {
    auto r = make(5);
    (void)round(r, t0, {vote(A), vote(A), vote(B), lost(), lost()});  // 2 of 5: no majority
    EXPECT_TRUE(r.accept(A, "master"));
    EXPECT_FALSE(r.accept(A, "slave"));
    EXPECT_FALSE(r.accept(A, std::nullopt));
    r.report_failure(A, t0 + 500ms);
    (void)round(r, t0 + 1s, {vote(A), vote(A), vote(B), vote(A), lost()});  // 3 of 5
    EXPECT_TRUE(r.accept(A, std::nullopt));
    EXPECT_FALSE(r.accept(B, std::nullopt));
    EXPECT_FALSE(r.accept(B, "sentinel"));
}

TEST(SentinelResolve, AbortedRoundBacksOffAndKeepsItsCause) {
    auto r = make();
    ASSERT_EQ(r.next(t0, t0 + 1s).what, step::ask);
    r.abort(t0 + 5ms, "boom");
    EXPECT_FALSE(r.resolving());
    EXPECT_EQ(r.last_failure(), "boom");
    EXPECT_EQ(r.next_round(), t0 + 15ms);
}

// Every arrangement of a round's answers over 3 and 5 sentinels, with losses (also answers
// that came after the round's deadline, which the driver reports as lost): the verdict depends
// only on how many sentinels said what, except that a tie goes to the earlier sentinel's
// address; and the choice is always the most-voted address.
TEST(SentinelResolve, EveryArrangementOfAnswersOf3And5Sentinels) {
    const std::vector<master_answer> kinds = {vote(A),
                                              vote(B),
                                              vote(C),
                                              nil_answer(),
                                              lost(),
                                              refused("ERR busy"),
                                              refused("NOAUTH Authentication required")};
    std::size_t rounds = 0;
    for (std::size_t n : {3u, 5u}) {
        // Every multiset of n answers from `kinds`, in every order of the sentinels.
        std::vector<std::size_t> pick(n, 0);
        for (;;) {
            std::map<std::string, std::size_t> votes;
            for (auto k : pick)
                if (kinds[k].what == master_answer::kind::master) ++votes[kinds[k].addr.host];
            std::size_t top = 0, at_top = 0;
            for (auto& [h, c] : votes) top = std::max(top, c);
            for (auto& [h, c] : votes) at_top += c == top;
            std::optional<verdict> first_kind;
            std::optional<host_port> first_choice;
            auto order = pick;
            do {
                auto r = make(n);
                std::vector<master_answer> answers;
                for (auto k : order) answers.push_back(kinds[k]);
                const auto v = round(r, t0, answers);
                ++rounds;
                if (!first_kind) first_kind = v.what;
                EXPECT_EQ(v.what, *first_kind);
                if (votes.empty()) {
                    EXPECT_NE(v.what, verdict::chosen);
                    continue;
                }
                ASSERT_EQ(v.what, verdict::chosen);
                EXPECT_EQ(votes[v.addr.host], top);  // always a most-voted address
                // The earliest sentinel naming a most-voted address wins a tie.
                for (auto k : order)
                    if (kinds[k].what == master_answer::kind::master &&
                        votes[kinds[k].addr.host] == top) {
                        EXPECT_EQ(v.addr, kinds[k].addr);
                        break;
                    }
                if (at_top == 1) {
                    if (!first_choice) first_choice = v.addr;
                    EXPECT_EQ(v.addr, *first_choice);  // order-independent without a tie
                }
                // The role check trusts an unknown role only from a strict majority of all sentinels.
                EXPECT_EQ(r.accept(v.addr, std::nullopt), top * 2 > n);
            } while (std::next_permutation(order.begin(), order.end()));
            // Next multiset (non-decreasing index sequences).
            std::size_t i = n;
            while (i > 0 && pick[i - 1] == kinds.size() - 1) --i;
            if (i == 0) break;
            ++pick[i - 1];
            for (std::size_t j = i; j < n; ++j) pick[j] = pick[i - 1];
        }
    }
    EXPECT_GT(rounds, 10000u);
}
