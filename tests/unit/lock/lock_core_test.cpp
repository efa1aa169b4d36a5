// The one lock driver (lock/src/lock_core.hpp) over a scripted transport, without a server: it
// sends what the engine decides (give-backs, the fencing floor, releases) and turns verdicts
// into the public contract (quorum_unreachable at once for a zero wait, outcome_unknown, a
// transport's own errors after the give-back).
#include "lock_core.hpp"
#include "scripts.hpp"

#include <redcoord/lock/errors.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

// A namespace of its own: a unity batch compiles this file with others (tests/CMakeLists.txt).
namespace lock_core_test {

using namespace std::chrono_literals;
using namespace redcoord;
using namespace redcoord::detail;
using clock_type = std::chrono::steady_clock;

namespace {

node_result answer(reply r) {
    node_result nr;
    nr.state = node_result::status::answered;
    nr.value = std::move(r);
    return nr;
}
node_result busy() {
    node_result nr;
    nr.state = node_result::status::pool_exhausted;
    nr.error = "no free connection (all 16 leased)";
    return nr;
}
node_result connecting() {
    node_result nr;
    nr.state = node_result::status::connecting;
    nr.error = "still connecting";
    return nr;
}
node_result down() {
    node_result nr;
    nr.state = node_result::status::connection_failed;
    nr.error = "connection refused";
    return nr;
}

// What the driver asked the transport to do.
struct sent {
    std::string what;  // "run", "give_back" or "send"
    round_kind kind;
    std::vector<std::string> args;
    std::vector<std::size_t> nodes;  // give_back
    clock_type::time_point at = clock_type::now();
};

class scripted_transport final : public lock_transport {
public:
    using step = std::function<std::exception_ptr(lock_round&)>;
    scripted_transport(std::vector<connection_pool*> pools, std::vector<sent>& log,
                       std::deque<step>& steps)
        : pools_(std::move(pools)), log_(log), steps_(steps) {}

    std::span<connection_pool* const> pools() const noexcept override { return pools_; }
    std::exception_ptr run(lock_round& round, const round_io& io) override {
        record("run", round, {io.only.begin(), io.only.end()});
        if (steps_.empty()) {  // unscripted: every node says "not ours" / refuses
            for (std::size_t i = 0; i < pools_.size(); ++i)
                round.on_result(i, answer(reply::make_integer(0)), clock_type::now());
            return nullptr;
        }
        auto s = std::move(steps_.front());
        steps_.pop_front();
        return s(round);
    }
    void give_back(lock_round& round, std::span<const std::size_t> nodes,
                   const round_io&) noexcept override {
        record("give_back", round, {nodes.begin(), nodes.end()});
        if (!give_back_steps.empty()) {
            auto s = std::move(give_back_steps.front());
            give_back_steps.pop_front();
            (void)s(round);
            return;
        }
        for (auto i : nodes) round.on_result(i, answer(reply::make_integer(1)), clock_type::now());
    }
    void send(lock_round& round, const round_io& io) noexcept override {
        record("send", round, {io.only.begin(), io.only.end()});
        if (!send_steps.empty()) {
            auto s = std::move(send_steps.front());
            send_steps.pop_front();
            (void)s(round);
            return;
        }
        for (std::size_t i = 0; i < pools_.size(); ++i)  // sent, not waited for
            if (io.only.empty() || std::find(io.only.begin(), io.only.end(), i) != io.only.end())
                round.on_result(i, node_result{}, clock_type::now());
    }
    std::vector<endpoint> waiter_endpoints() const override { return {}; }

    std::mutex log_mu;                 // the watchdog's rounds log from the timer thread
    std::deque<step> send_steps;       // scripted outcomes of send(); empty: every node sent
    std::deque<step> give_back_steps;  // of give_back(); empty: every node given deletes

private:
    void record(std::string what, const lock_round& round, std::vector<std::size_t> nodes) {
        const auto c = round.command();
        std::lock_guard l(log_mu);
        log_.push_back(
            {std::move(what), round.kind(), {c.args().begin(), c.args().end()}, std::move(nodes)});
    }
    std::vector<connection_pool*> pools_;
    std::vector<sent>& log_;
    std::deque<step>& steps_;
};

struct fixture {
    std::vector<std::unique_ptr<connection_pool>> owned;
    std::vector<sent> log;
    std::deque<scripted_transport::step> steps;
    std::unique_ptr<lock_core> core;
    scripted_transport* transport = nullptr;

    explicit fixture(std::size_t n, lock_core_config c = {}, pool_options po = {}) {
        std::vector<connection_pool*> pools;
        for (std::size_t i = 0; i < n; ++i) {
            owned.push_back(std::make_unique<connection_pool>(endpoint{}, po));  // never dialled
            pools.push_back(owned.back().get());
        }
        c.kind = "redlock";
        c.options_name = "redlock_options";
        c.prefix = "u:";
        if (c.ttl == lock_core_config{}.ttl) c.ttl = 10s;
        c.round_timeout = 50ms;
        c.keep_outcomes = true;
        c.max_extensions = std::numeric_limits<std::size_t>::max();
        auto t = std::make_unique<scripted_transport>(pools, log, steps);
        transport = t.get();
        core = std::make_unique<lock_core>(std::move(t), "res", c);
    }
};

// Node i answers `replies[i]` now.
scripted_transport::step replies(std::vector<node_result> rs) {
    return [rs](lock_round& round) {
        for (std::size_t i = 0; i < rs.size(); ++i) round.on_result(i, rs[i], clock_type::now());
        return std::exception_ptr{};
    };
}

}  // namespace

TEST(LockCore, ZeroWaitWithAMajorityDownGivesBackThenThrowsQuorumUnreachable) {
    fixture f(3);
    f.steps.push_back(replies({answer(reply::make_integer(7)), down(), down()}));
    EXPECT_THROW((void)f.core->acquire_until(clock_type::now()), quorum_unreachable);
    ASSERT_EQ(f.log.size(), 2u);
    EXPECT_EQ(f.log[0].kind, round_kind::acquire);
    ASSERT_EQ(f.log[0].args.size(), 10u);   // with the fairness arguments
    EXPECT_EQ(f.log[0].args[2], "0");       // redlock names the holders even without a wait
    EXPECT_EQ(f.log[0].args[9], "1");       // and honours release tombstones
    EXPECT_EQ(f.log[1].what, "give_back");  // the granting node and the unreachable ones
    EXPECT_EQ(f.log[1].nodes, (std::vector<std::size_t>{0, 1, 2}));
    // Our token, no floor, and a tombstone for an attempt still in flight.
    EXPECT_EQ(f.log[1].args, (std::vector<std::string>{f.log[0].args[0], "0", "10000", "10000"}));
    EXPECT_FALSE(f.core->is_held());
    EXPECT_EQ(f.core->last_outcomes().at(1).state, node_outcome::status::unreachable);
}

TEST(LockCore, GrantCommitsTheHoldingAndTheReleaseCarriesTheFloorWhenNeeded) {
    fixture f(3);
    // Counters 5, 9, 9: the token is 9 and a majority stands at it, so no floor is needed.
    f.steps.push_back(replies({answer(reply::make_integer(5)), answer(reply::make_integer(9)),
                               answer(reply::make_integer(9))}));
    auto got = f.core->acquire_until(clock_type::now());
    ASSERT_TRUE(got);
    EXPECT_EQ(got->fencing_token, 9u);
    EXPECT_TRUE(f.core->is_held());
    f.steps.push_back(
        replies({answer(reply::make_integer(1)), answer(reply::make_integer(1)), down()}));
    EXPECT_TRUE(f.core->release());
    ASSERT_EQ(f.log.back().kind, round_kind::release);
    EXPECT_EQ(f.log.back().args,
              (std::vector<std::string>{f.log.back().args[0], "0", "10000", "10000"}));  // no floor
    // Counters 9, 5, 3: token 9 on one node only: the release raises the others to it.
    f.steps.push_back(replies({answer(reply::make_integer(9)), answer(reply::make_integer(5)),
                               answer(reply::make_integer(3))}));
    ASSERT_TRUE(f.core->acquire_until(clock_type::now()));
    f.core->unlock();
    ASSERT_EQ(f.log.back().what, "send");
    EXPECT_EQ(f.log.back().args,
              (std::vector<std::string>{f.log.back().args[0], "9", "10000", "10000"}));
    EXPECT_FALSE(f.core->is_held());
}

TEST(LockCore, ReleaseAnsweredByTooFewIsUnknownAndStillClearsTheHolding) {
    fixture f(3);
    f.steps.push_back(replies({answer(reply::make_integer(1)), answer(reply::make_integer(1)),
                               answer(reply::make_integer(1))}));
    ASSERT_TRUE(f.core->acquire_until(clock_type::now()));
    f.steps.push_back(replies({answer(reply::make_integer(1)), down(), down()}));
    EXPECT_THROW((void)f.core->release(), outcome_unknown);
    EXPECT_FALSE(f.core->is_held());
    EXPECT_FALSE(f.core->release());  // nothing held: nothing sent
    EXPECT_EQ(f.log.back().kind, round_kind::release);
}

TEST(LockCore, ATransportsOwnErrorComesAfterTheGiveBack) {
    fixture f(1);
    f.steps.push_back([](lock_round& round) {
        node_result nr;
        nr.state = node_result::status::timeout;
        nr.error = "read timed out";
        round.on_result(0, nr, clock_type::now());
        return std::make_exception_ptr(timeout_error("read timed out"));
    });
    EXPECT_THROW((void)f.core->acquire_until(clock_type::now()), timeout_error);
    ASSERT_EQ(f.log.size(), 2u);
    EXPECT_EQ(f.log[1].what, "give_back");  // the reply was lost: the key may be ours
    EXPECT_FALSE(f.core->is_held());
}

TEST(LockCore, ExtensionVerdictsMoveOrKeepTheValidity) {
    fixture f(3);
    f.steps.push_back(replies({answer(reply::make_integer(1)), answer(reply::make_integer(1)),
                               answer(reply::make_integer(1))}));
    const auto got = f.core->acquire_until(clock_type::now());
    ASSERT_TRUE(got);
    f.steps.push_back(
        replies({answer(reply::make_integer(1)), answer(reply::make_integer(1)), down()}));
    EXPECT_TRUE(f.core->extend(10s));
    EXPECT_GE(f.core->current()->valid_until, got->valid_until);
    EXPECT_EQ(f.log.back().args, (std::vector<std::string>{got->token, "10000"}));
    f.steps.push_back(replies({answer(reply::make_integer(1)), down(), down()}));
    EXPECT_FALSE(f.core->extend(10s));  // not confirmed: not lost yet
    EXPECT_FALSE(f.core->lost());
    f.steps.push_back(
        replies({answer(reply::make_integer(0)), answer(reply::make_integer(0)), down()}));
    EXPECT_FALSE(f.core->extend(10s));  // a majority says the key is not ours
    EXPECT_TRUE(f.core->lost());
    EXPECT_THROW(f.core->extend(0ms), invalid_argument);
}

TEST(LockCore, WatchdogNeedsPoolsOfTwo) {
    std::vector<sent> log;
    std::deque<scripted_transport::step> steps;
    connection_pool small(endpoint{}, pool_options{.max_size = 1});
    lock_core_config c;
    c.kind = "lock";
    c.options_name = "lock_options";
    c.watchdog = true;
    c.max_extensions = 1;
    try {
        lock_core core(
            std::make_unique<scripted_transport>(std::vector<connection_pool*>{&small}, log, steps),
            "r", c);
        ADD_FAILURE() << "accepted a pool of one with the watchdog";
    } catch (const invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("lock_options::watchdog"), std::string::npos);
    }
}

// Nothing reached a node whose pool was busy: the release resends to exactly those nodes
// (the others keep their answers) until it is decided, instead of outcome_unknown.
TEST(LockCore, ReleaseResendsToTheNodesItsBusyPoolsLeftUnsent) {
    fixture f(3);
    f.steps.push_back(replies({answer(reply::make_integer(1)), answer(reply::make_integer(1)),
                               answer(reply::make_integer(1))}));
    ASSERT_TRUE(f.core->acquire_until(clock_type::now()));
    f.steps.push_back(replies({answer(reply::make_integer(1)), busy(), connecting()}));
    f.steps.push_back([](lock_round& round) {  // the resend: node 1 still busy, node 2 deletes
        round.on_result(1, busy(), clock_type::now());
        round.on_result(2, answer(reply::make_integer(1)), clock_type::now());
        return std::exception_ptr{};
    });
    EXPECT_TRUE(f.core->release());
    ASSERT_EQ(f.log.size(), 3u);
    EXPECT_TRUE(f.log[1].nodes.empty());  // the release: every node
    EXPECT_EQ(f.log[2].what, "run");
    EXPECT_EQ(f.log[2].kind, round_kind::release);
    EXPECT_EQ(f.log[2].nodes, (std::vector<std::size_t>{1, 2}));  // only the unsent ones
    EXPECT_EQ(f.log[2].args, f.log[1].args);
    EXPECT_TRUE(f.steps.empty());
}

// A pool that stays busy: the release gives up after the largest of the pool's borrow
// timeout, three round deadlines (here 3 x 50 ms) and a quarter of the TTL, then reports
// outcome_unknown.
TEST(LockCore, ReleaseGivesUpOnAPoolThatStaysBusyAfterItsWindow) {
    lock_core_config c;
    c.ttl = 400ms;
    fixture f(3, c, pool_options{.borrow_timeout = 0ms});
    f.steps.push_back(replies({answer(reply::make_integer(1)), answer(reply::make_integer(1)),
                               answer(reply::make_integer(1))}));
    ASSERT_TRUE(f.core->acquire_until(clock_type::now()));
    f.steps.push_back(replies({answer(reply::make_integer(1)), busy(), busy()}));
    for (int i = 0; i < 5000; ++i)
        f.steps.push_back([](lock_round& round) {  // only the resent nodes hear back
            round.on_result(1, busy(), clock_type::now());
            round.on_result(2, busy(), clock_type::now());
            return std::exception_ptr{};
        });
    const auto t = clock_type::now();
    EXPECT_THROW((void)f.core->release(), outcome_unknown);
    const auto took = clock_type::now() - t;
    EXPECT_GE(took, 150ms);
    EXPECT_LT(took, 2s);
    EXPECT_GT(f.log.size(), 3u);
    EXPECT_EQ(f.log.back().nodes, (std::vector<std::size_t>{1, 2}));
    EXPECT_FALSE(f.core->is_held());
}

// unlock() is not waited for, but a busy pool does not drop it: nodes nothing reached get it
// again, until every node was sent.
TEST(LockCore, UnlockResendsToNodesItsBusyPoolsLeftUnsent) {
    fixture f(3);
    f.steps.push_back(replies({answer(reply::make_integer(1)), answer(reply::make_integer(1)),
                               answer(reply::make_integer(1))}));
    ASSERT_TRUE(f.core->acquire_until(clock_type::now()));
    f.transport->send_steps.push_back(replies({node_result{}, busy(), connecting()}));
    f.transport->send_steps.push_back([](lock_round& round) {
        round.on_result(1, node_result{}, clock_type::now());
        round.on_result(2, busy(), clock_type::now());
        return std::exception_ptr{};
    });
    f.core->unlock();
    ASSERT_EQ(f.log.size(), 4u);
    EXPECT_EQ(f.log[1].what, "send");
    EXPECT_TRUE(f.log[1].nodes.empty());
    EXPECT_EQ(f.log[2].nodes, (std::vector<std::size_t>{1, 2}));
    EXPECT_EQ(f.log[3].nodes, (std::vector<std::size_t>{2}));  // sent by the default script
    EXPECT_FALSE(f.core->is_held());
}

// The single instance's only pool is busy: with a wait, that attempt is retried like a split
// vote (nothing was sent), not thrown as pool_exhausted; without one, it is the answer.
TEST(LockCore, SingleInstanceWaitOutlastsABusyPool) {
    lock_core_config c;
    c.waiting.retry_delay = 1ms;
    c.waiting.retry_jitter = 1ms;
    fixture f(1, c);
    auto busy_pool = [](lock_round& round) {
        round.on_not_sent(0, node_outcome::status::busy, "no free connection (all 1 leased)");
        return std::make_exception_ptr(pool_exhausted("no free connection (all 1 leased)"));
    };
    f.steps.push_back(busy_pool);
    EXPECT_THROW((void)f.core->acquire_until(clock_type::now()), pool_exhausted);
    for (int i = 0; i < 3; ++i) f.steps.push_back(busy_pool);
    f.steps.push_back(replies({answer(reply::make_integer(4))}));
    const auto got = f.core->acquire_until(clock_type::now() + 5s);
    ASSERT_TRUE(got);
    EXPECT_EQ(got->fencing_token, 4u);
    EXPECT_TRUE(f.steps.empty());
}

// Step 5's give-back reaches the nodes a busy pool left unsent, so this object's own stale
// key does not refuse its next attempts until the TTL.
TEST(LockCore, GiveBackResendsToNodesItsBusyPoolsLeftUnsent) {
    fixture f(3);
    node_result slow;
    slow.state = node_result::status::timeout;
    slow.error = "no reply within 50 ms";
    f.steps.push_back(replies({answer(reply::make_integer(7)), slow, down()}));
    f.transport->give_back_steps.push_back(
        replies({answer(reply::make_integer(1)), busy(), connecting()}));
    EXPECT_THROW((void)f.core->acquire_until(clock_type::now()), quorum_unreachable);
    ASSERT_EQ(f.log.size(), 3u);
    EXPECT_EQ(f.log[1].what, "give_back");
    EXPECT_EQ(f.log[1].nodes, (std::vector<std::size_t>{0, 1, 2}));
    EXPECT_EQ(f.log[2].what, "give_back");
    EXPECT_EQ(f.log[2].nodes, (std::vector<std::size_t>{1, 2}));
    EXPECT_EQ(f.log[2].args, f.log[1].args);
}

// The watchdog's next extension is due a period (ttl / 3) after the last one started, not
// after it ended: rounds slowed by a loaded machine (here 12 ms each, a 60 ms TTL) must not
// push each later extension closer to the expiry. Before, the starts were 32 ms apart.
TEST(LockCore, WatchdogExtensionsStayOnTheirPeriodWhenRoundsAreSlow) {
    fixture f(3);  // for its pools; this core has a 60 ms TTL
    std::vector<sent> log;
    std::deque<scripted_transport::step> steps;
    auto slow_yes = [](lock_round& round) {
        std::this_thread::sleep_for(12ms);
        for (std::size_t i = 0; i < 3; ++i)
            round.on_result(i, answer(reply::make_integer(1)), clock_type::now());
        return std::exception_ptr{};
    };
    steps.push_back(replies({answer(reply::make_integer(1)), answer(reply::make_integer(1)),
                             answer(reply::make_integer(1))}));
    for (int i = 0; i < 40; ++i) steps.push_back(slow_yes);
    lock_core_config w;
    w.kind = "redlock";
    w.options_name = "redlock_options";
    w.prefix = "u:";
    w.ttl = 60ms;
    w.drift_factor = 0;
    w.round_timeout = 50ms;
    w.watchdog = true;
    w.max_extensions = std::numeric_limits<std::size_t>::max();
    auto t = std::make_unique<scripted_transport>(
        std::vector<connection_pool*>{f.owned[0].get(), f.owned[1].get(), f.owned[2].get()}, log,
        steps);
    auto* tp = t.get();
    lock_core core(std::move(t), "wd", w);
    ASSERT_TRUE(core.acquire_until(clock_type::now()));
    std::this_thread::sleep_for(250ms);
    std::vector<clock_type::time_point> starts;
    {
        std::lock_guard l(tp->log_mu);
        for (const auto& e : log)
            if (e.kind == round_kind::extend) starts.push_back(e.at);
    }
    EXPECT_FALSE(core.lost());
    ASSERT_GE(starts.size(), 5u);
    // Period 20 ms from each start; allow scheduling slack, but well under 20 + 12 ms.
    const auto mean = (starts.back() - starts.front()) / static_cast<int>(starts.size() - 1);
    EXPECT_LT(mean, 27ms) << starts.size() << " extensions";
}  // ~lock_core stops the watchdog, then releases

}  // namespace lock_core_test
