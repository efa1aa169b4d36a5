// The waiting policy shared by distributed_lock and redlock (lock/src/acquire_loop), driven
// by scripted attempt outcomes, with a real release_waiter on a real server: releases are
// real PUBLISHes on the lock's channel.
#include "acquire_loop.hpp"

#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <mutex>
#include <thread>

using namespace std::chrono_literals;
using redcoord::detail::acquire_loop;
using redcoord::detail::ask;
using redcoord::detail::contention_memory;
using redcoord::detail::refusal;
using redcoord::detail::release_waiter;
using redcoord::detail::wait_settings;
using clock_type = std::chrono::steady_clock;

namespace {

const char* name(ask a) {
    switch (a) {
        case ask::nothing: return "nothing";
        case ask::holder: return "holder";
        case ask::mark: return "mark";
        case ask::look: return "look";
    }
    return "?";
}

// One scripted step: what the attempt answers, and optionally a release to publish just
// before answering (so the waiter's next sleep is cut short by it).
struct step {
    bool acquired = false;
    refusal why;
    bool publish_after = false;  // publish a release right after this step's answer
};

step refused_by(std::string holder, bool publish_after = false) {
    step s;
    s.why.one_holder = true;
    s.why.holder = std::move(holder);
    s.why.pttl = 30000;  // long: the fallback timer never cuts a test short
    s.publish_after = publish_after;
    return s;
}

step free_lock() {
    step s;  // a look that finds no holder
    return s;
}

step got_it() {
    step s;
    s.acquired = true;
    return s;
}

class AcquireLoop : public ::testing::Test {
protected:
    void SetUp() override {
        server_ = std::make_unique<redcoord::testing::local_server>();
        waiter_ = std::make_unique<release_waiter>(std::vector<redcoord::endpoint>{server_->endpoint()}, channel_);
    }

    // Runs the loop against `script`; records what each call asked for.
    bool run(std::deque<step> script, clock_type::duration wait, const wait_settings& ws, contention_memory& memory) {
        asked_.clear();
        std::vector<std::thread> publishers;
        const bool ok = acquire_loop(
            clock_type::now() + wait, ws, memory, [this]() -> release_waiter& { return *waiter_; },
            [&](ask what, refusal& why) {
                asked_.push_back(name(what));
                if (script.empty()) return false;  // ran past the script: keep refusing
                step s = std::move(script.front());
                script.pop_front();
                if (s.publish_after)  // a release shortly after this answer
                    publishers.emplace_back([this] {
                        std::this_thread::sleep_for(20ms);
                        (void)server_->command({"PUBLISH", channel_, "released"});
                    });
                why = s.why;
                return s.acquired;
            });
        for (auto& t : publishers) t.join();
        return ok;
    }

    std::unique_ptr<redcoord::testing::local_server> server_;
    std::string channel_ = "test:lock:released";
    std::unique_ptr<release_waiter> waiter_;
    std::vector<std::string> asked_;
};

wait_settings settings() {
    wait_settings ws;
    ws.retry_jitter = 0ms;
    ws.wake_jitter = 0ms;
    ws.contention_backoff = 10ms;
    return ws;
}

using strings = std::vector<std::string>;

TEST_F(AcquireLoop, QuietLockIsMarkedAndWaitedFor) {
    contention_memory memory;
    // Refused, subscribed and refused again (marking), then woken by the release and acquired.
    EXPECT_TRUE(run({refused_by("a"), refused_by("a", true), got_it()}, 5s, settings(), memory));
    EXPECT_EQ(asked_, (strings{"mark", "mark", "mark"}));
    EXPECT_EQ(memory.losses, 0u);
}

TEST_F(AcquireLoop, BusyLockIsLookedAtNotMarked) {
    contention_memory memory;
    // Woken, but the holder took the lock back at once ("b"): from then on the waiter backs
    // off and looks; a new holding each time ("c", "d") keeps it looking; a free-looking lock
    // gets an attempt that does not mark.
    EXPECT_TRUE(run({refused_by("a"), refused_by("a", true), refused_by("b"), refused_by("c"), refused_by("d"),
                     free_lock(), got_it()},
                    5s, settings(), memory));
    EXPECT_EQ(asked_, (strings{"mark", "mark", "mark", "look", "look", "look", "holder"}));
}

TEST_F(AcquireLoop, BusyLockThatGoesQuietIsMarkedAgain) {
    contention_memory memory;
    // After the lost race, looks see "c" twice in a row: one holding outlived a back-off, so
    // the waiter marks it and sleeps until its release, which wakes it.
    EXPECT_TRUE(run({refused_by("a"), refused_by("a", true), refused_by("b"), refused_by("c"), refused_by("c"),
                     refused_by("c", true), got_it()},
                    5s, settings(), memory));
    EXPECT_EQ(asked_, (strings{"mark", "mark", "mark", "look", "look", "mark", "mark"}));
    EXPECT_EQ(memory.losses, 0u);
}

TEST_F(AcquireLoop, ContentionCarriesOverToTheNextCallBriefly) {
    contention_memory memory;
    // A call that ends while backing off leaves its level behind...
    EXPECT_FALSE(run({refused_by("a"), refused_by("a", true), refused_by("b"), refused_by("c"), refused_by("d")},
                     150ms, settings(), memory));
    EXPECT_GT(memory.losses, 0u);
    // ...so the next call, started soon after (set here: sanitizer builds are slow), starts
    // without marking and goes straight to looking.
    memory.at = clock_type::now();
    EXPECT_TRUE(run({refused_by("e"), refused_by("f"), free_lock(), got_it()}, 5s, settings(), memory));
    EXPECT_EQ(asked_, (strings{"holder", "look", "look", "holder"}));
    // Long after, a call starts afresh: it marks.
    memory.at = clock_type::now() - 1s;
    EXPECT_TRUE(run({got_it()}, 5s, settings(), memory));
    EXPECT_EQ(asked_, (strings{"mark"}));
}

TEST_F(AcquireLoop, ZeroBackoffNeverPolls) {
    contention_memory memory;
    auto ws = settings();
    ws.contention_backoff = 0ms;
    // Losing the race after a wake-up goes back to marking and waiting for the next release.
    EXPECT_TRUE(run({refused_by("a"), refused_by("a", true), refused_by("b", true), got_it()}, 5s, ws, memory));
    EXPECT_EQ(asked_, (strings{"mark", "mark", "mark", "mark"}));
}

TEST_F(AcquireLoop, TryLockAsksForNothingAndRetryCountBounds) {
    contention_memory memory;
    EXPECT_FALSE(run({refused_by("a")}, 0ms, settings(), memory));
    EXPECT_EQ(asked_, (strings{"nothing"}));
    auto ws = settings();
    ws.retry_count = 2;
    EXPECT_FALSE(run({refused_by("a"), refused_by("a"), refused_by("a")}, 5s, ws, memory));
    EXPECT_EQ(asked_, (strings{"mark", "mark"}));
}

TEST_F(AcquireLoop, AttemptErrorsPropagate) {
    contention_memory memory;
    EXPECT_THROW((void)acquire_loop(
                     clock_type::now() + 1s, settings(), memory, [this]() -> release_waiter& { return *waiter_; },
                     [](ask, refusal&) -> bool { throw std::runtime_error("node down"); }),
                 std::runtime_error);
}

}  // namespace
