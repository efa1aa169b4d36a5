// The waiting policy (lock/src/wait_policy.hpp) without a server or sleeps: scripted attempt
// outcomes, scripted release notifications and a fake clock.
#include "wait_policy.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <vector>

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
        case ask::look: return "look";
    }
    return "?";
}

struct step {
    bool acquired = false;
    refusal why;
    // A release is announced this long after this step's answer (cutting a wait short).
    std::optional<clock_type::duration> release_after;
};

step refused_by(std::string holder, std::optional<clock_type::duration> release_after = std::nullopt,
                std::int64_t pttl = 30000) {
    step s;
    s.why.one_holder = true;
    s.why.holder = std::move(holder);
    s.why.pttl = pttl;
    s.release_after = release_after;
    return s;
}
step free_lock() { return {}; }
step got_it() { return {true, {}, {}}; }
step down() {
    step s;
    s.why.down = true;
    return s;
}

// Runs a policy against scripted steps on a fake clock: an attempt or look takes 1 ms, a wait
// lasts until its end or the next scripted release, a pause until its end.
struct fake_driver {
    wait_settings ws;
    contention_memory memory;
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
        wait_policy p(ws, memory, deadline, rnd);
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
                case type::look: {
                    auto s = answer(ask::look);
                    a = p.on_look(s.why, now);
                    break;
                }
                case type::subscribe: ++subscribes; a = p.on_subscribed(now); break;
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
            if (actions[i].what_to_do == t && actions[i].until > issued_at[i]) out.push_back(actions[i].until - issued_at[i]);
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
    d.ws.contention_backoff = 10ms;
    return d;
}

}  // namespace

TEST(LockWaitPolicy, QuietLockIsMarkedAndWaitedFor) {
    auto d = driver();
    // Refused, subscribed and refused again (marking), then woken by the release and acquired.
    EXPECT_TRUE(d.run({refused_by("a"), refused_by("a", 20ms), got_it()}, 5s));
    EXPECT_EQ(d.asked, (strings{"mark", "mark", "mark"}));
    EXPECT_EQ(d.subscribes, 1u);
    EXPECT_EQ(d.memory.losses, 0u);
    EXPECT_EQ(d.now, t0 + 3ms + 20ms);  // no polling: the release ended the one wait
}

TEST(LockWaitPolicy, QuietLockSleepsUntilTheHoldersTtlWithoutARelease) {
    auto d = driver();
    d.rnd = [](std::uint64_t, std::uint64_t hi) { return hi; };  // the largest jitter
    d.ws.retry_jitter = 5ms;
    EXPECT_TRUE(d.run({refused_by("a", std::nullopt, 400), refused_by("a", std::nullopt, 300), got_it()}, 5s));
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

TEST(LockWaitPolicy, BusyLockIsLookedAtNotMarked) {
    auto d = driver();
    // Woken, but the holder took the lock back at once ("b"): from then on the waiter backs
    // off and looks; a new holding each time ("c", "d") keeps it looking; a free-looking lock
    // gets an attempt that does not mark.
    EXPECT_TRUE(d.run({refused_by("a"), refused_by("a", 20ms), refused_by("b"), refused_by("c"), refused_by("d"),
                       free_lock(), got_it()},
                      5s));
    EXPECT_EQ(d.asked, (strings{"mark", "mark", "mark", "look", "look", "look", "holder"}));
    // The back-offs are deaf to releases.
    for (const auto& p : d.of(type::pause)) EXPECT_TRUE(p.forget_releases);
}

TEST(LockWaitPolicy, BusyLockBackOffGrowsUpToItsCap) {
    auto d = driver();
    d.rnd = [](std::uint64_t, std::uint64_t hi) { return hi; };
    d.ws.contention_backoff = 1ms;
    // Lost the race after a wake-up, then new holdings on every look.
    EXPECT_FALSE(d.run({refused_by("a"), refused_by("a", 5ms), refused_by("b"), refused_by("c"), refused_by("d"),
                        refused_by("e"), refused_by("f"), refused_by("g")},
                       60ms));
    const auto lengths = d.lengths(type::pause);  // the wake-up's zero jitter left out
    ASSERT_GE(lengths.size(), 4u);
    EXPECT_EQ(lengths[0], 250us);  // 0.25 ms * 2^(k-1)...
    EXPECT_EQ(lengths[1], 500us);
    EXPECT_EQ(lengths[2], 1ms);    // ...up to the cap
    EXPECT_EQ(lengths[3], 1ms);
}

TEST(LockWaitPolicy, BusyLockThatGoesQuietIsMarkedAgain) {
    auto d = driver();
    // After the lost race, looks see "c" twice in a row: one holding outlived a back-off, so
    // the waiter marks it and sleeps until its release, which wakes it.
    EXPECT_TRUE(d.run({refused_by("a"), refused_by("a", 20ms), refused_by("b"), refused_by("c"), refused_by("c"),
                       refused_by("c", 20ms), got_it()},
                      5s));
    EXPECT_EQ(d.asked, (strings{"mark", "mark", "mark", "look", "look", "mark", "mark"}));
    EXPECT_EQ(d.memory.losses, 0u);
}

TEST(LockWaitPolicy, ContentionCarriesOverToTheNextCallBriefly) {
    auto d = driver();
    // A call that ends while backing off leaves its level behind...
    EXPECT_FALSE(d.run({refused_by("a"), refused_by("a", 20ms), refused_by("b"), refused_by("c"), refused_by("d")},
                       40ms));
    EXPECT_GT(d.memory.losses, 0u);
    // ...so the next call, started within 2 x contention_backoff, starts without marking and
    // goes straight to looking.
    d.now = d.memory.at + 19ms;
    EXPECT_TRUE(d.run({refused_by("e"), refused_by("f"), free_lock(), got_it()}, 5s));
    EXPECT_EQ(d.asked, (strings{"holder", "look", "look", "holder"}));
    // A winner of a busy lock keeps its level fresh.
    EXPECT_EQ(d.memory.at, d.now);
    // Long after, a call starts afresh: it marks.
    d.now = d.memory.at + 20ms;
    EXPECT_TRUE(d.run({got_it()}, 5s));
    EXPECT_EQ(d.asked, (strings{"mark"}));
}

TEST(LockWaitPolicy, ZeroBackoffNeverPolls) {
    auto d = driver();
    d.ws.contention_backoff = 0ms;
    // Losing the race after a wake-up goes back to marking and waiting for the next release.
    EXPECT_TRUE(d.run({refused_by("a"), refused_by("a", 20ms), refused_by("b", 20ms), got_it()}, 5s));
    EXPECT_EQ(d.asked, (strings{"mark", "mark", "mark", "mark"}));
    EXPECT_TRUE(d.of(type::look).empty());
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
    EXPECT_FALSE(pauses[0].forget_releases);  // a release during it must still cut the next wait short
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
    EXPECT_EQ(d.of(type::wait)[0].until, t0 + 250ms);  // slept until its deadline (PTTL 30 s), not past it
    EXPECT_EQ(d.asked, (strings{"mark", "mark", "mark"}));  // and made its last attempt there
}
