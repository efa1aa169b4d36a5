// The waiting policy (lock/src/wait_policy.hpp) without a server or sleeps: scripted attempt
// outcomes, scripted release notifications and a fake clock.
#include "wait_policy.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <random>
#include <string>
#include <vector>

// A namespace of its own: a unity batch compiles this file with others (tests/CMakeLists.txt).
namespace wait_policy_test {

using namespace std::chrono_literals;
using namespace redcoord::detail;
using clock_type = std::chrono::steady_clock;
using type = wait_action::type;
using strings = std::vector<std::string>;

namespace {

const clock_type::time_point t0{std::chrono::hours(1)};

const char* name(ask a) {
    switch (a) {
        case ask::nothing: return "nothing";
        case ask::holder: return "holder";
        case ask::mark: return "mark";
    }
    return "?";
}

struct step {
    bool acquired = false;
    refusal why;
    // A release is announced this long after this step's answer (cutting a wait short).
    std::optional<clock_type::duration> release_after;
};

step refused_by(std::string holder,
                std::optional<clock_type::duration> release_after = std::nullopt,
                std::int64_t pttl = 30000, std::int64_t turn_left = 0) {
    step s;
    s.why.one_holder = true;
    s.why.holder = std::move(holder);
    s.why.pttl = pttl;
    s.why.turn_left = turn_left;
    s.release_after = release_after;
    return s;
}
// Refused by a holder whose turn has `turn_left` ms to go.
step in_turn(std::int64_t turn_left,
             std::optional<clock_type::duration> release_after = std::nullopt) {
    return refused_by("h", release_after, 30000, turn_left);
}
step yielding() {
    step s;
    s.why.yielding = true;
    return s;
}
step free_lock() { return {}; }
step got_it() { return {true, {}, {}}; }
step down() {
    step s;
    s.why.down = true;
    return s;
}

// Runs a policy against scripted steps on a fake clock: an attempt takes 1 ms, a wait
// lasts until its end or the next scripted release, a pause until its end.
struct fake_driver {
    wait_settings ws;
    random_source rnd = [](std::uint64_t lo, std::uint64_t) { return lo; };  // no jitter
    bool live = true;
    clock_type::time_point now = t0;
    strings asked;
    std::vector<wait_action> actions;
    std::vector<clock_type::time_point> issued_at;  // when each action was given
    std::size_t subscribes = 0;

    bool run(std::deque<step> script, clock_type::duration wait) {
        asked.clear();
        actions.clear();
        issued_at.clear();
        const auto deadline = now + wait;
        wait_policy p(ws, deadline, rnd);
        std::optional<clock_type::time_point> release_at;
        auto answer = [&](ask what) {
            asked.push_back(name(what));
            now += 1ms;
            step s;
            if (!script.empty()) {
                s = std::move(script.front());
                script.pop_front();
            } else {
                s = free_lock();  // ran past the script: refused, no holder seen
            }
            if (s.release_after) release_at = now + *s.release_after;
            return s;
        };
        auto a = p.start(now);
        for (int guard = 0; guard < 10000; ++guard) {
            actions.push_back(a);
            issued_at.push_back(now);
            switch (a.what_to_do) {
                case type::done: return a.acquired;
                case type::attempt: {
                    auto s = answer(a.what);
                    a = p.on_attempt(s.acquired, s.why, now, live);
                    break;
                }
                case type::subscribe:
                    ++subscribes;
                    a = p.on_subscribed(now);
                    break;
                case type::wait: {
                    EXPECT_LE(a.until, deadline);
                    const bool woke = release_at && *release_at < a.until;
                    now = std::max(now, woke ? *release_at : a.until);
                    if (woke) release_at.reset();
                    a = p.on_waited(woke, now);
                    break;
                }
                case type::pause:
                    EXPECT_LE(a.until, deadline);
                    now = std::max(now, a.until);
                    a = p.on_paused(now);
                    break;
            }
        }
        ADD_FAILURE() << "the policy never finished";
        return false;
    }
    // How long each wait or pause of kind `t` was asked to last.
    std::vector<clock_type::duration> lengths(type t) const {
        std::vector<clock_type::duration> out;
        for (std::size_t i = 0; i < actions.size(); ++i)
            if (actions[i].what_to_do == t && actions[i].until > issued_at[i])
                out.push_back(actions[i].until - issued_at[i]);
        return out;
    }
    std::vector<wait_action> of(type t) const {
        std::vector<wait_action> out;
        for (const auto& a : actions)
            if (a.what_to_do == t) out.push_back(a);
        return out;
    }
};

fake_driver driver() {
    fake_driver d;
    d.ws.retry_jitter = 0ms;
    d.ws.wake_jitter = 0ms;
    return d;
}

}  // namespace

TEST(LockWaitPolicy, QuietLockIsMarkedAndWaitedFor) {
    auto d = driver();
    // Refused, subscribed and refused again (marking), then woken by the release and acquired.
    EXPECT_TRUE(d.run({refused_by("a"), refused_by("a", 20ms), got_it()}, 5s));
    EXPECT_EQ(d.asked, (strings{"mark", "mark", "mark"}));
    EXPECT_EQ(d.subscribes, 1u);
    EXPECT_EQ(d.now, t0 + 3ms + 20ms);  // no polling: the release ended the one wait
}

TEST(LockWaitPolicy, QuietLockSleepsUntilTheHoldersTtlWithoutARelease) {
    auto d = driver();
    d.rnd = [](std::uint64_t, std::uint64_t hi) { return hi; };  // the largest jitter
    d.ws.retry_jitter = 5ms;
    EXPECT_TRUE(d.run(
        {refused_by("a", std::nullopt, 400), refused_by("a", std::nullopt, 300), got_it()}, 5s));
    const auto waits = d.of(type::wait);
    ASSERT_EQ(waits.size(), 1u);
    EXPECT_EQ(waits[0].until, t0 + 2ms + 300ms + 5ms);  // the holder's PTTL plus jitter
    // Without a live notification link the sleep is capped by max_retry_interval.
    auto e = driver();
    e.live = false;
    e.ws.max_retry_interval = 100ms;
    EXPECT_TRUE(e.run({refused_by("a"), refused_by("a"), got_it()}, 5s));
    EXPECT_EQ(e.of(type::wait).at(0).until, t0 + 2ms + 100ms);
}

TEST(LockWaitPolicy, AHolderInItsTurnIsStillWaitedForByRelease) {
    // A holder that may re-acquire (turn left) but has not yet: the waiter listens, so a
    // release hands the lock over at once (a holder that stops using it).
    auto d = driver();
    EXPECT_TRUE(d.run({in_turn(8), in_turn(8, 300us), got_it()}, 5s));
    EXPECT_EQ(d.asked, (strings{"mark", "mark", "mark"}));
    EXPECT_EQ(d.of(type::wait).size(), 1u);
    EXPECT_TRUE(d.lengths(type::pause).empty());  // only the wake-up's (zero) jitter
}

TEST(LockWaitPolicy, WaiterThatLosesAReleaseToTheHoldersTurnSleepsThroughTheTurn) {
    auto d = driver();
    // Woken by the release, but the holder took the lock back within its turn (8 ms left):
    // no more wake-ups on its releases until the turn is over, then a marking attempt.
    EXPECT_TRUE(d.run({in_turn(9), in_turn(9, 100us), in_turn(8, 200us), got_it()}, 5s));
    EXPECT_EQ(d.asked, (strings{"mark", "mark", "mark", "mark"}));
    const auto pauses = d.of(type::pause);
    ASSERT_EQ(pauses.size(), 2u);  // the wake-up's (zero) jitter, then the turn
    EXPECT_TRUE(pauses[1].forget_releases);
    EXPECT_EQ(d.lengths(type::pause).back(), 8ms);
    // After the turn a refusal by the next holding is waited for by release again.
    auto e = driver();
    EXPECT_TRUE(
        e.run({in_turn(9), in_turn(9, 100us), in_turn(8), refused_by("x", 5ms), got_it()}, 5s));
    EXPECT_EQ(e.of(type::wait).size(), 2u);
}

TEST(LockWaitPolicy, LosingARaceWithoutATurnLeftWaitsForTheNextRelease) {
    auto d = driver();
    // Woken, but another waiter got in first (its turn just began is reported as 0 here, a
    // holder without fairness): mark and wait for its release.
    EXPECT_TRUE(
        d.run({refused_by("a"), refused_by("a", 20ms), refused_by("b", 20ms), got_it()}, 5s));
    EXPECT_EQ(d.asked, (strings{"mark", "mark", "mark", "mark"}));
    EXPECT_EQ(d.of(type::wait).size(), 2u);
}

TEST(LockWaitPolicy, WakeJitterShrinksWithEveryLostRelease) {
    auto d = driver();
    d.rnd = [](std::uint64_t, std::uint64_t hi) { return hi; };
    d.ws.wake_jitter = 1ms;
    EXPECT_TRUE(
        d.run({refused_by("a"), refused_by("a", 1ms), refused_by("b", 1ms), refused_by("c", 1ms),
               refused_by("d", 1ms), refused_by("e", 1ms), refused_by("f", 1ms), got_it()},
              5s));
    std::vector<clock_type::duration> wake_pauses;
    for (std::size_t i = 0; i < d.actions.size(); ++i)
        if (d.actions[i].what_to_do == type::pause)
            wake_pauses.push_back(d.actions[i].until - d.issued_at[i]);
    EXPECT_EQ(wake_pauses,
              (std::vector<clock_type::duration>{1000us, 500us, 250us, 125us, 62us, 62us}));
}

TEST(LockWaitPolicy, AnOwnerThatYieldsPausesBrieflyAndGrowing) {
    auto d = driver();
    EXPECT_TRUE(d.run({yielding(), yielding(), yielding(), yielding(), yielding(), yielding(),
                       yielding(), got_it()},
                      5s));
    EXPECT_EQ(d.lengths(type::pause),
              (std::vector<clock_type::duration>{250us, 500us, 1ms, 2ms, 4ms, 4ms}));
    for (const auto& p : d.of(type::pause)) EXPECT_TRUE(p.forget_releases);
    EXPECT_TRUE(d.of(type::wait).empty());  // nothing publishes on a free lock: never waited for
    // Then finding the new holder is waited for by release as usual.
    auto e = driver();
    EXPECT_TRUE(e.run({yielding(), refused_by("w", 3ms), got_it()}, 5s));
    EXPECT_EQ(e.of(type::wait).size(), 1u);
}

TEST(LockWaitPolicy, TryLockAsksForNothingAndRetryCountBounds) {
    auto d = driver();
    EXPECT_FALSE(d.run({refused_by("a")}, 0ms));
    EXPECT_EQ(d.asked, (strings{"nothing"}));
    EXPECT_EQ(d.subscribes, 0u);  // a zero wait never subscribes
    d.ws.retry_count = 2;
    EXPECT_FALSE(d.run({refused_by("a"), refused_by("a"), refused_by("a")}, 5s));
    EXPECT_EQ(d.asked, (strings{"mark", "mark"}));
}

TEST(LockWaitPolicy, SplitVoteRetriesAfterRetryDelayPlusJitter) {
    auto d = driver();
    d.ws.retry_delay = 5ms;
    d.ws.retry_jitter = 10ms;
    d.rnd = [](std::uint64_t, std::uint64_t hi) { return hi; };
    EXPECT_TRUE(d.run({free_lock(), free_lock(), free_lock(), got_it()}, 5s));
    const auto waits = d.of(type::wait);
    ASSERT_EQ(waits.size(), 2u);
    EXPECT_EQ(waits[0].until, t0 + 2ms + 5ms + 10ms);
    EXPECT_EQ(d.asked, (strings{"mark", "mark", "mark", "mark"}));
}

TEST(LockWaitPolicy, FirstRetryIsJitteredAndKeepsReleasesSeenMeanwhile) {
    auto d = driver();
    d.ws.jitter_first_retry = true;
    d.ws.retry_jitter = 10ms;
    d.rnd = [](std::uint64_t, std::uint64_t hi) { return hi; };
    EXPECT_TRUE(d.run({refused_by("a"), got_it()}, 5s));
    const auto pauses = d.of(type::pause);
    ASSERT_EQ(pauses.size(), 1u);
    EXPECT_EQ(pauses[0].until, t0 + 1ms + 10ms);
    EXPECT_FALSE(
        pauses[0].forget_releases);  // a release during it must still cut the next wait short
}

TEST(LockWaitPolicy, MajorityDownIsWaitedForWithAGrowingPause) {
    auto d = driver();
    d.ws.retry_delay = 5ms;
    d.ws.max_retry_interval = 40ms;
    EXPECT_FALSE(d.run({down(), down(), down(), down(), down(), down(), down(), down()}, 200ms));
    const auto pauses = d.lengths(type::wait);
    ASSERT_GE(pauses.size(), 5u);
    EXPECT_EQ(pauses[0], 5ms);
    EXPECT_EQ(pauses[1], 10ms);
    EXPECT_EQ(pauses[2], 20ms);
    EXPECT_EQ(pauses[3], 40ms);
    EXPECT_EQ(pauses[4], 40ms);  // capped at max_retry_interval
    // A split vote in between resets the pause.
    auto e = driver();
    e.ws.retry_delay = 5ms;
    EXPECT_TRUE(e.run({down(), down(), down(), free_lock(), down(), got_it()}, 5s));
    EXPECT_EQ(e.lengths(type::wait), (std::vector<clock_type::duration>{5ms, 10ms, 5ms, 5ms}));
}

TEST(LockWaitPolicy, EveryWaitEndsByTheDeadline) {
    auto d = driver();
    EXPECT_FALSE(d.run({refused_by("a"), refused_by("a"), refused_by("a")}, 250ms));
    ASSERT_EQ(d.of(type::wait).size(), 1u);
    EXPECT_EQ(d.of(type::wait)[0].until,
              t0 + 250ms);  // slept until its deadline (PTTL 30 s), not past it
    EXPECT_EQ(d.asked, (strings{"mark", "mark", "mark"}));  // and made its last attempt there
}

TEST(LockWaitPolicy, RandomSchedulesEndByTheDeadlineAndNeverSpin) {
    // Thousands of seeded random refusal sequences: every wait and pause ends by the
    // deadline, the call ends by it (plus the 1 ms an attempt takes here), and the policy
    // never makes two attempts without time passing beyond the attempts themselves, except
    // right after subscribing.
    for (std::uint32_t seed = 1; seed <= 3000; ++seed) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        std::mt19937 gen(seed);
        auto pick = [&](int n) { return static_cast<int>(gen() % static_cast<std::uint32_t>(n)); };
        std::deque<step> script;
        for (int i = 0; i < 40; ++i) {
            switch (pick(6)) {
                case 0:
                    script.push_back(
                        refused_by("h" + std::to_string(pick(3)), std::nullopt, pick(50)));
                    break;
                case 1:
                    script.push_back(in_turn(pick(12), std::chrono::microseconds(pick(2000))));
                    break;
                case 2: script.push_back(yielding()); break;
                case 3: script.push_back(free_lock()); break;
                case 4: script.push_back(down()); break;
                default:
                    script.push_back(
                        refused_by("h", std::chrono::microseconds(pick(3000)), 30000, pick(3)));
                    break;
            }
        }
        if (pick(4) == 0) script.push_back(got_it());
        auto d = driver();
        std::mt19937 jit(seed * 7919u);
        d.rnd = [&jit](std::uint64_t lo, std::uint64_t hi) { return lo + jit() % (hi - lo + 1); };
        d.ws.wake_jitter = 1ms;
        d.ws.retry_jitter = 5ms;
        d.ws.retry_delay = 1ms;
        d.ws.jitter_first_retry = pick(2) == 0;
        const auto wait = std::chrono::milliseconds(1 + pick(300));
        const auto start = d.now;
        (void)d.run(script, wait);
        EXPECT_LE(d.now, start + wait + 1ms);
        int back_to_back = 0;
        for (std::size_t i = 1; i < d.actions.size(); ++i) {
            const bool attempt_now = d.actions[i].what_to_do == type::attempt;
            const bool attempt_before = d.actions[i - 1].what_to_do == type::attempt;
            if (attempt_now && attempt_before) ++back_to_back;
        }
        EXPECT_EQ(back_to_back, 0);
    }
}

}  // namespace wait_policy_test
