// The lock engine's rounds (lock/src/lock_engine.hpp) without a server: scripted replies and a
// fake clock. Every arrival order of every mix of replies for 3 and 5 nodes (permutations,
// losses, error replies, replies past the round's deadline, nodes not waited for), the
// validity at its edges, extension and release verdicts, fencing tokens and the single
// instance with WAIT.
#include "lock_engine.hpp"
#include "scripts.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using namespace redcoord;
using namespace redcoord::detail;
using status = node_outcome::status;
using clock_type = std::chrono::steady_clock;

namespace {

const clock_type::time_point t0{std::chrono::hours(1)};  // the fake clock's "start of round"

lock_engine engine(std::size_t n, std::chrono::milliseconds ttl = 10s, double drift = 0.01,
                   std::chrono::milliseconds round_timeout = 50ms, std::size_t replicas = 0) {
    lock_engine_config c;
    c.nodes = n;
    c.label = "redlock 'r'";
    c.key = "p:lock:{r}";
    c.fence_key = "p:lock:{r}:fence";
    c.ttl = ttl;
    c.drift_factor = drift;
    c.round_timeout = round_timeout;
    c.replicas = replicas;
    return lock_engine(c);
}

node_result answer(reply r) {
    node_result nr;
    nr.state = node_result::status::answered;
    nr.value = std::move(r);
    return nr;
}
node_result integer(std::int64_t v) { return answer(reply::make_integer(v)); }
node_result refused(std::int64_t pttl, std::string holder) {
    return answer(reply::make_array({reply::make_integer(0), reply::make_integer(pttl),
                                     reply::make_text(reply::kind::string, std::move(holder))}));
}
node_result error_reply(std::string text) {
    return answer(reply::make_text(reply::kind::error, std::move(text)));
}
node_result failure(node_result::status s) {
    node_result nr;
    nr.state = s;
    nr.error = "scripted";
    return nr;
}

// What one node does in a scripted acquire round.
enum class act {
    yes,
    no_a,
    no_b,
    error,
    timeout,
    unreachable,
    late_yes
};
constexpr act all_acts[] = {act::yes,     act::no_a,        act::no_b,    act::error,
                            act::timeout, act::unreachable, act::late_yes};

// Node i's fencing counter when it grants: ties on purpose (nodes 0 and 2 agree), so the
// floor decision sees both cases.
std::uint64_t fence_of(std::size_t i) { return 100 + (i % 2 == 0 ? 7 : i); }

struct arrival {
    node_result r;
    clock_type::time_point at;
};

arrival scripted(act a, std::size_t i, std::size_t order) {
    const auto at = t0 + std::chrono::milliseconds(1 + order);  // in the order given, within 50 ms
    switch (a) {
        case act::yes: return {integer(static_cast<std::int64_t>(fence_of(i))), at};
        case act::no_a: return {refused(900 + static_cast<std::int64_t>(i), "aaaa"), at};
        case act::no_b: return {refused(800, "bbbb"), at};
        case act::error: return {error_reply("OOM command not allowed"), at};
        case act::timeout: return {failure(node_result::status::timeout), t0 + 50ms};
        case act::unreachable: return {failure(node_result::status::connection_failed), at};
        case act::late_yes:
            return {integer(static_cast<std::int64_t>(fence_of(i))),
                    t0 + 51ms + std::chrono::milliseconds(order)};
    }
    return {};
}

// All multisets of `k` acts (node identities are placed by the permutations).
void multisets(std::size_t k, std::size_t from, std::vector<act>& cur,
               std::vector<std::vector<act>>& out) {
    if (cur.size() == k) {
        out.push_back(cur);
        return;
    }
    for (std::size_t a = from; a < std::size(all_acts); ++a) {
        cur.push_back(all_acts[a]);
        multisets(k, a, cur, out);
        cur.pop_back();
    }
}

// Feeds `acts` (node i does acts[i]) in the order `order` (a permutation of node indices) until
// the round is decided, as fan_out's stop_when does; the rest stay not waited for. Checks the
// verdict against what the whole mix implies, whatever the order.
void check_acquire_order(std::size_t n, const std::vector<act>& acts,
                         const std::vector<std::size_t>& order) {
    const auto e = engine(n);
    const std::size_t q = quorum(n);
    auto round = e.acquire("tok", ask::mark, t0);
    std::vector<char> fed(n, 0);
    clock_type::time_point now = t0;
    for (std::size_t k = 0; k < n && !round.decided(); ++k) {
        const auto i = order[k];
        auto a = scripted(acts[i], i, k);
        round.on_result(i, a.r, a.at);
        now = std::max(now, a.at);
        fed[i] = 1;
    }
    for (std::size_t i = 0; i < n; ++i)
        if (!fed[i]) round.on_result(i, failure(node_result::status::pending), now);
    const auto v = e.decide_acquire(round, now);

    // Granted iff a majority granted in time: early decisions never change that.
    const auto on_time_yes =
        static_cast<std::size_t>(std::count(acts.begin(), acts.end(), act::yes));
    ASSERT_EQ(v.got.has_value(), on_time_yes >= q);
    if (v.got) {
        EXPECT_TRUE(v.give_back.empty());
        EXPECT_EQ(v.got->token, "tok");
        EXPECT_EQ(v.got->valid_until, t0 + 10s - clock_drift(10s, 0.01));
        // The fencing token is the largest counter among the nodes counted as granting.
        std::uint64_t top = 0;
        std::size_t at_top = 0;
        for (std::size_t i = 0; i < n; ++i)
            if (fed[i] && acts[i] == act::yes) top = std::max(top, fence_of(i));
        for (std::size_t i = 0; i < n; ++i)
            at_top += (fed[i] && acts[i] == act::yes && fence_of(i) == top) ? 1 : 0;
        EXPECT_EQ(v.got->fencing_token, top);
        EXPECT_EQ(v.floor_needed, at_top < q);
        return;
    }
    // Not granted: every node that may hold our key gets it back, and no other.
    std::vector<std::size_t> expect;
    for (std::size_t i = 0; i < n; ++i) {
        const bool clean_no = fed[i] && (acts[i] == act::no_a || acts[i] == act::no_b);
        if (!clean_no) expect.push_back(i);
    }
    EXPECT_EQ(v.give_back, expect);
    // A late yes is a timeout: it vouches for nothing.
    for (std::size_t i = 0; i < n; ++i)
        if (fed[i] && acts[i] == act::late_yes)
            EXPECT_EQ(round.outcomes()[i].state, status::timeout);
    // One holder only when a majority of the answers named the same holding.
    std::size_t a_votes = 0, b_votes = 0, failed = 0, slow = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (!fed[i]) continue;
        a_votes += acts[i] == act::no_a;
        b_votes += acts[i] == act::no_b;
        failed += acts[i] == act::error || acts[i] == act::timeout || acts[i] == act::unreachable ||
                  acts[i] == act::late_yes;
        slow += acts[i] == act::timeout || acts[i] == act::late_yes;
    }
    if (failed > n - q) {
        EXPECT_FALSE(v.unreachable.empty());
        EXPECT_FALSE(v.why.one_holder);
        EXPECT_EQ(v.why.down, failed - slow > n - q);
        return;
    }
    EXPECT_TRUE(v.unreachable.empty());
    EXPECT_EQ(v.why.one_holder, a_votes >= q || b_votes >= q);
    if (a_votes >= q) {
        EXPECT_EQ(v.why.holder, "aaaa");
        std::int64_t least = -1;  // the smallest PTTL among the holder's nodes
        for (std::size_t i = 0; i < n; ++i)
            if (fed[i] && acts[i] == act::no_a &&
                (least < 0 || 900 + static_cast<std::int64_t>(i) < least))
                least = 900 + static_cast<std::int64_t>(i);
        EXPECT_EQ(v.why.pttl, least);
    }
    if (b_votes >= q) EXPECT_EQ(v.why.holder, "bbbb");
}

std::size_t every_order(std::size_t n,
                        const std::function<void(const std::vector<std::size_t>&)>& f) {
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::size_t count = 0;
    do {
        f(order);
        ++count;
    } while (std::next_permutation(order.begin(), order.end()));
    return count;
}

void acquire_every_order(std::size_t n) {
    std::vector<std::vector<act>> mixes;
    std::vector<act> cur;
    multisets(n, 0, cur, mixes);
    std::size_t rounds = 0;
    for (const auto& mix : mixes) {
        // Each mix on the nodes in every arrival order; node identities come from the order.
        rounds += every_order(n, [&](const std::vector<std::size_t>& order) {
            std::vector<act> acts(n);
            for (std::size_t k = 0; k < n; ++k) acts[order[k]] = mix[k];
            SCOPED_TRACE(::testing::Message() << "n=" << n << " order[0]=" << order[0]);
            check_acquire_order(n, acts, order);
        });
        if (::testing::Test::HasFatalFailure()) return;
    }
    EXPECT_GT(rounds, 0u);
}

}  // namespace

TEST(LockEngineAcquire, EveryReplyOrderOfThreeNodes) { acquire_every_order(3); }
TEST(LockEngineAcquire, EveryReplyOrderOfFiveNodes) { acquire_every_order(5); }

TEST(LockEngineAcquire, CommandsAreDataForEveryNode) {
    const auto e = engine(5);
    auto r = e.acquire("tok", ask::nothing, t0);
    auto c = r.command();
    EXPECT_EQ(c.lua, &acquire_script());
    ASSERT_EQ(c.keys().size(), 2u);
    EXPECT_EQ(c.keys()[0], "p:lock:{r}");
    EXPECT_EQ(c.keys()[1], "p:lock:{r}:fence");
    // try_lock's hot path: token and ttl only.
    ASSERT_EQ(c.args().size(), 2u);
    EXPECT_EQ(c.args()[0], "tok");
    EXPECT_EQ(c.args()[1], "10000");
    auto marking = e.acquire("tok", ask::mark, t0);
    ASSERT_EQ(marking.command().args().size(), 3u);
    EXPECT_EQ(marking.command().args()[2], "1");
    EXPECT_EQ(e.acquire("tok", ask::holder, t0).command().args()[2], "0");
    // Redlock names the holder even on a zero-wait attempt (last_outcomes() reports it).
    lock_engine_config named = e.config();
    named.name_holders = true;
    auto zero_wait = lock_engine(named).acquire("tok", ask::nothing, t0);
    ASSERT_EQ(zero_wait.command().args().size(), 3u);
    EXPECT_EQ(zero_wait.command().args()[2], "0");
    auto back = e.give_back(marking, t0);
    EXPECT_EQ(back.command().lua, &release_script());
    EXPECT_EQ(back.command().keys().size(), 1u);
    ASSERT_EQ(back.command().args().size(), 1u);
    EXPECT_EQ(back.command().args()[0], "tok");
}

TEST(LockEngineAcquire, ValidityAtItsEdges) {
    // ttl 100 ms, drift 1 % + 2 ms = 3 ms: granted while elapsed < 97 ms.
    const auto e = engine(1, 100ms, 0.01, 0ms);
    const auto drift = clock_drift(100ms, 0.01);
    ASSERT_EQ(drift, 3ms);
    auto at = [&](clock_type::duration elapsed) {
        auto r = e.acquire("tok", ask::nothing, t0);
        r.on_result(0, integer(5), t0 + elapsed);
        return e.decide_acquire(r, t0 + elapsed);
    };
    auto just_in = at(100ms - drift - 1us);
    ASSERT_TRUE(just_in.got);
    EXPECT_EQ(just_in.got->valid_until, t0 + 100ms - drift);  // from the start, not the reply
    auto exactly = at(100ms - drift);  // elapsed = ttl - drift: zero validity is none
    EXPECT_FALSE(exactly.got);
    EXPECT_EQ(exactly.give_back, std::vector<std::size_t>{0});  // too slow: given back at once
    EXPECT_FALSE(exactly.why.one_holder);                       // and retried soon, not waited for
    EXPECT_TRUE(exactly.unreachable.empty());
    EXPECT_FALSE(at(100ms).got);
    // Zero drift factor: only the fixed 2 ms remain.
    const auto e0 = engine(1, 100ms, 0.0, 0ms);
    auto r = e0.acquire("tok", ask::nothing, t0);
    r.on_result(0, integer(5), t0 + 97ms);
    ASSERT_TRUE(e0.decide_acquire(r, t0 + 97ms).got);
    EXPECT_EQ(e0.decide_acquire(r, t0 + 97ms).got->valid_until, t0 + 98ms);
    EXPECT_FALSE(e0.decide_acquire(r, t0 + 98ms).got);
}

TEST(LockEngineAcquire, ReplyExactlyAtTheRoundDeadlineCountsOneMicrosecondLaterDoesNot) {
    const auto e = engine(3);
    auto r = e.acquire("tok", ask::mark, t0);
    r.on_result(0, integer(9), t0 + 50ms);
    r.on_result(1, integer(9), t0 + 50ms + 1us);
    r.on_result(2, refused(10, "aaaa"), t0 + 1ms);
    EXPECT_EQ(r.outcomes()[0].state, status::yes);
    EXPECT_EQ(r.outcomes()[1].state, status::timeout);
    const auto v = e.decide_acquire(r, t0 + 51ms);
    EXPECT_FALSE(v.got);
    EXPECT_EQ(v.give_back, (std::vector<std::size_t>{0, 1}));
}

TEST(LockEngineAcquire, BusyPoolsAndConnectsUnderWayAreNeitherVotesNorGivenBack) {
    const auto e = engine(5);
    auto r = e.acquire("tok", ask::mark, t0);
    r.on_result(0, failure(node_result::status::pool_exhausted), t0 + 1ms);
    r.on_result(1, failure(node_result::status::connecting), t0 + 50ms);
    r.on_result(2, integer(3), t0 + 1ms);
    r.on_result(3, integer(4), t0 + 1ms);
    EXPECT_FALSE(r.decided());  // 2 yes, 1 slow: the fifth decides
    r.on_result(4, refused(10, "aaaa"), t0 + 2ms);
    EXPECT_FALSE(r.decided());  // the busy node is no vote: the round runs to its deadline
    const auto v = e.decide_acquire(r, t0 + 50ms);
    EXPECT_FALSE(v.got);
    EXPECT_TRUE(v.unreachable.empty());  // 1 slow node of 5: not a majority down
    EXPECT_EQ(v.give_back, (std::vector<std::size_t>{2, 3}));
    // Nothing reached a node whose pool gave no connection.
    auto s = e.acquire("tok", ask::mark, t0);
    for (std::size_t i = 0; i < 5; ++i) s.on_not_sent(i, status::unreachable, "refused");
    const auto w = e.decide_acquire(s, t0 + 1ms);
    EXPECT_TRUE(w.give_back.empty());
    EXPECT_FALSE(w.unreachable.empty());
    EXPECT_TRUE(w.why.down);  // refused at once: wait with a growing pause
}

TEST(LockEngineAcquire, SlowMajorityIsNotDown) {
    const auto e = engine(3);
    auto r = e.acquire("tok", ask::mark, t0);
    r.on_result(0, failure(node_result::status::timeout), t0 + 50ms);
    r.on_result(1, failure(node_result::status::connecting), t0 + 50ms);
    r.on_result(2, integer(1), t0 + 1ms);
    const auto v = e.decide_acquire(r, t0 + 50ms);
    EXPECT_FALSE(v.got);
    EXPECT_NE(v.unreachable.find("0 of 3 nodes down or erroring, 2 slow"), std::string::npos)
        << v.unreachable;
    EXPECT_FALSE(v.why.down);  // retried like a split vote
}

TEST(LockEngineAcquire, SingleInstanceRefusalIsOneHolderEvenWithoutItsId) {
    const auto e = engine(1, 10s, 0.01, 0ms);
    auto r = e.acquire("tok", ask::nothing, t0);
    r.on_result(0, integer(-2 - 1234), t0 + 1ms);  // refused, the holder's PTTL 1234 ms
    const auto v = e.decide_acquire(r, t0 + 1ms);
    EXPECT_FALSE(v.got);
    EXPECT_TRUE(v.give_back.empty());  // a clean refusal took nothing
    EXPECT_TRUE(v.why.one_holder);
    EXPECT_EQ(v.why.pttl, 1234);
    // On N nodes, unknown ids prove nothing.
    const auto e3 = engine(3);
    auto s = e3.acquire("tok", ask::nothing, t0);
    for (std::size_t i = 0; i < 3; ++i) s.on_result(i, integer(-2 - 50), t0 + 1ms);
    EXPECT_FALSE(e3.decide_acquire(s, t0 + 1ms).why.one_holder);
}

TEST(LockEngineAcquire, SingleInstanceWithReplicasNeedsTheirAcks) {
    const auto e = engine(1, 10s, 0.01, 0ms, 2);
    auto r = e.acquire("tok", ask::mark, t0);
    r.on_result(0, integer(42), t0 + 3ms,
                1);  // the master granted, one replica of two acknowledged
    EXPECT_TRUE(r.decided());
    auto v = e.decide_acquire(r, t0 + 3ms);
    EXPECT_FALSE(v.got);
    EXPECT_EQ(v.give_back, std::vector<std::size_t>{0});  // a failover could lose it: give it back
    EXPECT_FALSE(v.why.one_holder);                       // retried after replica_timeout
    EXPECT_TRUE(v.unreachable.empty());
    EXPECT_FALSE(v.why.down);
    auto s = e.acquire("tok", ask::mark, t0);
    s.on_result(0, integer(42), t0 + 3ms, 2);
    v = e.decide_acquire(s, t0 + 3ms);
    ASSERT_TRUE(v.got);
    EXPECT_EQ(v.got->fencing_token, 42u);
    EXPECT_FALSE(v.floor_needed);  // one counter: nothing to raise
}

TEST(LockEngineAcquire, ErrorRepliesAndOddShapesAreFailures) {
    const auto e = engine(1, 10s, 0.01, 0ms);
    for (auto bad : {integer(0), answer(reply::make_text(reply::kind::status, "OK")),
                     answer(reply::make_array({reply::make_integer(1)})), error_reply("ERR x")}) {
        auto r = e.acquire("tok", ask::mark, t0);
        r.on_result(0, bad, t0 + 1ms);
        EXPECT_EQ(r.outcomes()[0].state, status::error);
        const auto v = e.decide_acquire(r, t0 + 1ms);
        EXPECT_FALSE(v.got);
        EXPECT_EQ(v.give_back, std::vector<std::size_t>{0});  // it may have run half-way
    }
}

TEST(LockEngineExtend, EveryReplyOrderOfThreeAndFiveNodes) {
    enum class e_act {
        yes,
        no,
        timeout,
        late_yes
    };
    for (std::size_t n : {3u, 5u}) {
        const auto eng = engine(n);
        const std::size_t q = quorum(n);
        std::size_t mixes = 1;
        for (std::size_t k = 0; k < n; ++k) mixes *= 4;
        for (std::size_t m = 0; m < mixes; ++m) {
            std::vector<e_act> acts(n);
            for (std::size_t k = 0, x = m; k < n; ++k, x /= 4) acts[k] = static_cast<e_act>(x % 4);
            const auto yes =
                static_cast<std::size_t>(std::count(acts.begin(), acts.end(), e_act::yes));
            const auto no =
                static_cast<std::size_t>(std::count(acts.begin(), acts.end(), e_act::no));
            every_order(n, [&](const std::vector<std::size_t>& order) {
                auto r = eng.extend("tok", 10s, t0);
                auto now = t0;
                for (std::size_t k = 0; k < n && !r.decided(); ++k) {
                    const auto i = order[k];
                    now = t0 + std::chrono::milliseconds(1 + k);
                    switch (acts[i]) {
                        case e_act::yes: r.on_result(i, integer(1), now); break;
                        case e_act::no: r.on_result(i, integer(0), now); break;
                        case e_act::timeout:
                            r.on_result(i, failure(node_result::status::timeout), now);
                            break;
                        case e_act::late_yes:
                            now = t0 + 60ms;
                            r.on_result(i, integer(1), now);
                            break;
                    }
                }
                const auto v = eng.decide_extend(r, 10s, now);
                ASSERT_EQ(v == extend_result::extended, yes >= q) << "mix " << m;
                if (v == extend_result::lost)
                    EXPECT_GT(no, n - q) << "lost without a majority saying not ours";
                // Every node answered "not ours" before anything else decided: lost.
                if (no == n) EXPECT_EQ(v, extend_result::lost);
            });
        }
    }
}

TEST(LockEngineExtend, ValidityAtItsEdgesAndReplicas) {
    const auto e = engine(1, 100ms, 0.01, 0ms, 1);
    auto at = [&](clock_type::duration elapsed, std::size_t acks, std::int64_t reply) {
        auto r = e.extend("tok", 100ms, t0);
        r.on_result(0, integer(reply), t0 + elapsed, acks);
        return e.decide_extend(r, 100ms, t0 + elapsed);
    };
    EXPECT_EQ(at(1ms, 1, 1), extend_result::extended);
    EXPECT_EQ(at(97ms - 1us, 1, 1), extend_result::extended);
    EXPECT_EQ(at(97ms, 1, 1), extend_result::not_confirmed);  // no validity left to vouch for
    EXPECT_EQ(at(1ms, 0, 1), extend_result::not_confirmed);   // the replica did not acknowledge
    EXPECT_EQ(at(1ms, 0, 0), extend_result::lost);            // the key is not ours any more
    const auto round = e.extend("tok", 250ms, t0);            // the command's views point into it
    const auto c = round.command();
    EXPECT_EQ(c.lua, &extend_script());
    ASSERT_EQ(c.args().size(), 2u);
    EXPECT_EQ(c.args()[1], "250");
}

TEST(LockEngineRelease, MajorityDecidesAndTheFloorTravelsOnlyWhenNeeded) {
    const auto e = engine(5);
    lock_acquisition a{"tok", t0 + 9s, 77};
    auto with = e.release(a, true, t0);
    auto c = with.command();
    ASSERT_EQ(c.keys().size(), 2u);
    ASSERT_EQ(c.args().size(), 3u);
    EXPECT_EQ(c.args()[1], "77");
    EXPECT_EQ(c.args()[2], "10000");
    EXPECT_EQ(e.release(a, false, t0).command().args().size(), 1u);

    auto verdict = [&](std::vector<int> replies) {  // 1, 0, or -1 for a timeout, in node order
        auto r = e.release(a, false, t0);
        for (std::size_t i = 0; i < replies.size() && !r.decided(); ++i)
            r.on_result(
                i, replies[i] < 0 ? failure(node_result::status::timeout) : integer(replies[i]),
                t0 + 1ms);
        return e.decide_release(r);
    };
    EXPECT_EQ(verdict({1, 1, 1}), release_verdict::released);
    EXPECT_EQ(verdict({0, 1, 0, 1, 0}), release_verdict::not_ours);
    EXPECT_EQ(verdict({1, 1, -1, -1, 0}), release_verdict::unknown);
    EXPECT_EQ(verdict({-1, -1, -1}), release_verdict::unknown);
    auto r = e.release(a, false, t0);
    for (std::size_t i = 0; i < 3; ++i)
        r.on_result(i, failure(node_result::status::timeout), t0 + 50ms);
    EXPECT_NE(e.release_unknown(r).find("3 failed"), std::string::npos);
}

namespace {

lock_engine fair_engine(std::size_t n) {
    auto c = engine(n).config();
    c.turn_key = "p:lock:{r}:turn";
    c.waiting_key = "p:lock:{r}:waiting";
    c.owner = "me";
    c.handoff_after = 10ms;
    c.grace = 50ms;
    return lock_engine(c);
}

node_result refused_in_turn(std::int64_t pttl, std::string holder, std::int64_t turn_left,
                            bool yielding) {
    return answer(
        reply::make_array({reply::make_integer(0), reply::make_integer(pttl),
                           reply::make_text(reply::kind::string, std::move(holder)),
                           reply::make_integer(turn_left), reply::make_integer(yielding ? 1 : 0)}));
}

}  // namespace

TEST(LockEngineFairness, EveryAttemptCarriesTheTurnKeysAndArguments) {
    const auto e = fair_engine(3);
    for (auto what : {ask::nothing, ask::holder, ask::mark}) {
        auto r = e.acquire("tok", what, t0);
        const auto c = r.command();
        ASSERT_EQ(c.keys().size(), 4u);
        EXPECT_EQ(c.keys()[2], "p:lock:{r}:turn");
        EXPECT_EQ(c.keys()[3], "p:lock:{r}:waiting");
        ASSERT_EQ(c.args().size(), 10u);
        EXPECT_EQ(c.args()[9], "0");  // no tombstones: a single instance
        EXPECT_EQ(c.args()[2], what == ask::nothing ? "-" : what == ask::mark ? "1" : "0");
        EXPECT_EQ(c.args()[3], "me");
        EXPECT_EQ(c.args()[4], "10");
        EXPECT_EQ(c.args()[5], "50");
        EXPECT_EQ(c.args()[6], "");   // no previous holding held back
        EXPECT_EQ(c.args()[7], "0");  // so no floor
        EXPECT_EQ(c.args()[8], "0");  // not refused since the last acquisition
    }
    // A re-lock names the previous holding, its floor when its release needed one, and
    // whether this object may be named as a waiter.
    const lock_acquisition prev{"old", t0, 41};
    auto r = e.acquire("tok", ask::mark, t0,
                       {.previous = &prev, .previous_floor = true, .registered = true});
    EXPECT_EQ(r.command().args()[6], "old");
    EXPECT_EQ(r.command().args()[7], "41");
    EXPECT_EQ(r.command().args()[8], "1");
    auto no_floor = e.acquire("tok", ask::mark, t0, {.previous = &prev});
    EXPECT_EQ(no_floor.command().args()[7], "0");
}

TEST(LockEngineFairness, ARefusalReportsTheSmallestTurnLeftOfTheHoldersNodes) {
    const auto e = fair_engine(3);
    auto r = e.acquire("tok", ask::mark, t0);
    r.on_result(0, refused_in_turn(900, "aaaa", 7, false), t0 + 1ms);
    r.on_result(1, refused_in_turn(800, "aaaa", 4, false), t0 + 1ms);
    r.on_result(2, refused_in_turn(500, "bbbb", 1, false), t0 + 1ms);
    const auto v = e.decide_acquire(r, t0 + 1ms);
    ASSERT_TRUE(v.why.one_holder);
    EXPECT_EQ(v.why.holder, "aaaa");
    EXPECT_EQ(v.why.pttl, 800);
    EXPECT_EQ(v.why.turn_left, 4);  // not node 2's: another holding
    EXPECT_FALSE(v.why.yielding);
    EXPECT_EQ(r.outcomes()[0].turn_left, 7);
}

TEST(LockEngineFairness, YieldingNodesMakeTheRefusalAYield) {
    const auto e = fair_engine(3);
    // Two nodes yield (free, our turn over, someone waits), one grants: no majority, and the
    // granting node gets its key back.
    auto r = e.acquire("tok", ask::mark, t0);
    r.on_result(0, refused_in_turn(-2, "", 0, true), t0 + 1ms);
    r.on_result(1, refused_in_turn(-2, "", 0, true), t0 + 1ms);
    r.on_result(2, integer(5), t0 + 1ms);
    const auto v = e.decide_acquire(r, t0 + 1ms);
    EXPECT_FALSE(v.got);
    EXPECT_TRUE(v.why.yielding);
    EXPECT_FALSE(v.why.one_holder);
    EXPECT_EQ(v.give_back, (std::vector<std::size_t>{2}));
    // The single instance's short reply for a yield (-3) reads as a refusal with 1 ms left.
    const auto single = fair_engine(1);
    auto s = single.acquire("tok", ask::nothing, t0);
    s.on_result(0, integer(-3), t0 + 1ms);
    EXPECT_EQ(s.outcomes()[0].state, status::no);
    EXPECT_EQ(s.outcomes()[0].pttl, 1);
}

TEST(LockEngineFairness, RedlockReleasesLeaveTombstonesAndAttemptsHonourThem) {
    auto c = fair_engine(3).config();
    c.tombstones = true;
    const lock_engine e(c);
    auto a = e.acquire("tok", ask::mark, t0);
    ASSERT_EQ(a.command().args().size(), 10u);
    EXPECT_EQ(a.command().args()[9], "1");
    // A release, with and without a floor, and a give-back: token, floor, counter TTL, tombstone TTL.
    const lock_acquisition held{"tok", t0, 7};
    for (bool floor : {false, true}) {
        auto r = e.release(held, floor, t0);
        const auto cmd = r.command();
        ASSERT_EQ(cmd.keys().size(), 2u);
        ASSERT_EQ(cmd.args().size(), 4u);
        EXPECT_EQ(cmd.args()[0], "tok");
        EXPECT_EQ(cmd.args()[1], floor ? "7" : "0");
        EXPECT_EQ(cmd.args()[2], "10000");
        EXPECT_EQ(cmd.args()[3], "10000");
    }
    auto back = e.give_back(a, t0);
    ASSERT_EQ(back.command().args().size(), 4u);
    EXPECT_EQ(back.command().args()[1], "0");
    EXPECT_EQ(back.command().args()[3], "10000");
    // The single instance waits for every acquire's answer: no tombstones.
    EXPECT_EQ(fair_engine(1).acquire("tok", ask::mark, t0).command().args()[9], "0");
}
