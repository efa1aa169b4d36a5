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

step in_turn(std::int64_t turn_left, bool publish_after = false) {
    auto s = refused_by("h", publish_after);
    s.why.turn_left = turn_left;
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
        waiter_ = std::make_unique<release_waiter>(
            std::vector<redcoord::endpoint>{server_->endpoint()}, channel_);
    }

    // Runs the loop against `script`; records what each call asked for.
    bool run(std::deque<step> script, clock_type::duration wait, const wait_settings& ws) {
        asked_.clear();
        std::vector<std::thread> publishers;
        const bool ok = acquire_loop(
            clock_type::now() + wait, ws, [this]() -> release_waiter& { return *waiter_; },
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
    return ws;
}

using strings = std::vector<std::string>;

TEST_F(AcquireLoop, QuietLockIsMarkedAndWaitedFor) {
    // Refused, subscribed and refused again (marking), then woken by the release and acquired.
    EXPECT_TRUE(run({refused_by("a"), refused_by("a", true), got_it()}, 5s, settings()));
    EXPECT_EQ(asked_, (strings{"mark", "mark", "mark"}));
}

TEST_F(AcquireLoop, AReleaseLostToTheHoldersTurnIsSleptThrough) {
    // Woken by a real release, but the holder took the lock back within its turn (300 ms
    // left): the next releases (published meanwhile) do not wake the waiter before the turn
    // is over.
    const auto t0 = clock_type::now();
    EXPECT_TRUE(
        run({in_turn(300), in_turn(300, true), in_turn(300, true), got_it()}, 5s, settings()));
    EXPECT_EQ(asked_, (strings{"mark", "mark", "mark", "mark"}));
    EXPECT_GE(clock_type::now() - t0, 300ms);
}

TEST_F(AcquireLoop, TryLockAsksForNothingAndRetryCountBounds) {
    EXPECT_FALSE(run({refused_by("a")}, 0ms, settings()));
    EXPECT_EQ(asked_, (strings{"nothing"}));
    auto ws = settings();
    ws.retry_count = 2;
    EXPECT_FALSE(run({refused_by("a"), refused_by("a"), refused_by("a")}, 5s, ws));
    EXPECT_EQ(asked_, (strings{"mark", "mark"}));
}

TEST_F(AcquireLoop, AttemptErrorsPropagate) {
    EXPECT_THROW(
        (void)acquire_loop(
            clock_type::now() + 1s, settings(), [this]() -> release_waiter& { return *waiter_; },
            [](ask, refusal&) -> bool { throw std::runtime_error("node down"); }),
        std::runtime_error);
}

}  // namespace
