#include "event_log.hpp"

#include <redcoord/core/detail/serial_executor.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/election/leader_elector.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/wait.hpp>

#include "test_hooks.hpp"  // election/src: the m1 window

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <mutex>

#include <latch>
#include <thread>

using namespace redcoord;
using namespace std::chrono_literals;
using election_test::event_log;
using redcoord::testing::eventually;
using redcoord::testing::local_server;

namespace {
election_options opts(std::string id, std::chrono::milliseconds term) {
    election_options o;
    o.identity = std::move(id);
    o.term = term;
    return o;
}
}  // namespace

TEST(LeaderElector, OneOfThreeLeadsAndEveryoneSeesIt) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    std::vector<std::unique_ptr<leader_elector>> e;
    for (int i = 0; i < 3; ++i)
        e.push_back(
            std::make_unique<leader_elector>(pool, "trio", opts("n" + std::to_string(i), 600ms)));
    for (auto& x : e) x->start();
    ASSERT_TRUE(eventually(
        [&] {
            return std::count_if(e.begin(), e.end(), [](auto& x) { return x->is_leader(); }) == 1;
        },
        3s));
    auto it = std::find_if(e.begin(), e.end(), [](auto& x) { return x->is_leader(); });
    const std::string id = (*it)->identity();
    EXPECT_EQ((*it)->leader(), std::optional<std::string>(id));
    EXPECT_GT((*it)->epoch(), 0u);
    ASSERT_TRUE((*it)->deadline());
    EXPECT_LE(*(*it)->deadline(), std::chrono::steady_clock::now() + 600ms);
    for (auto& x : e) {
        if (x.get() != it->get()) {
            EXPECT_FALSE(x->is_leader());
            EXPECT_EQ(x->epoch(), 0u);
            EXPECT_TRUE(eventually(
                [&] { return x->last_known_leader() == std::optional<std::string>(id); }, 2s));
        }
    }
    // Over several terms the same leader keeps the same epoch (re-election).
    const auto ep = (*it)->epoch();
    std::this_thread::sleep_for(1500ms);
    EXPECT_TRUE((*it)->is_leader());
    EXPECT_EQ((*it)->epoch(), ep);
}

TEST(LeaderElector, ResignHandsOverWithoutWaitingForARetryPeriod) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    // A long term and retry period: only the handoff signal can explain a quick takeover.
    const auto term = 9s;
    std::vector<std::unique_ptr<leader_elector>> e;
    std::vector<std::unique_ptr<event_log>> logs;
    for (int i = 0; i < 3; ++i) {
        e.push_back(
            std::make_unique<leader_elector>(pool, "handoff", opts("h" + std::to_string(i), term)));
        logs.push_back(std::make_unique<event_log>(*e.back()));
    }
    for (auto& x : e) x->start();
    ASSERT_TRUE(eventually(
        [&] { return std::any_of(e.begin(), e.end(), [](auto& x) { return x->is_leader(); }); },
        3s));
    // Let every follower finish its first round and subscribe.
    ASSERT_TRUE(eventually(
        [&] { return std::all_of(e.begin(), e.end(), [](auto& x) { return x->rounds() >= 1; }); },
        3s));
    std::this_thread::sleep_for(300ms);
    // The three electors share their runtime's pub/sub link: one subscription serves them all.
    ASSERT_EQ(
        srv.command({"PUBSUB", "NUMSUB", make_election_keys(default_prefix, "handoff").channel})
            .elements()[1]
            .integer(),
        1);

    for (int handoffs = 0; handoffs < 3; ++handoffs) {
        auto old = std::find_if(e.begin(), e.end(), [](auto& x) { return x->is_leader(); });
        ASSERT_NE(old, e.end());
        const auto old_epoch = (*old)->epoch();
        std::vector<std::size_t> before;
        for (auto& l : logs) before.push_back(l->count('E'));
        ASSERT_TRUE((*old)->resign());
        const auto resigned_at = std::chrono::steady_clock::now();
        EXPECT_FALSE((*old)->is_leader());
        leader_elector* next = nullptr;
        ASSERT_TRUE(eventually(
            [&] {
                for (auto& x : e)
                    if (x.get() != old->get() && x->is_leader()) next = x.get();
                return next != nullptr;
            },
            2s))
            << "no follower took over after resign " << handoffs << " holder "
            << srv.command(
                      {"HGET", make_election_keys(default_prefix, "handoff").selector, "holder"})
                   .maybe_text()
                   .value_or("none")
            << " old " << (*old)->identity();
        // Well inside one retry period (3 s): the followers campaigned on the signal.
        EXPECT_LT(std::chrono::steady_clock::now() - resigned_at, 1500ms);
        EXPECT_GT(next->epoch(), old_epoch);
        std::this_thread::sleep_for(100ms);
    }
    for (auto& l : logs) EXPECT_TRUE(election_test::paired(l->events()));
}

TEST(LeaderElector, CallbacksAreOrderedPairedAndOnOneThread) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    leader_elector e(pool, "callbacks", opts("me", 400ms));
    event_log log(e);
    e.start();
    ASSERT_TRUE(log.wait_for('E', 1, 3s));
    // Someone else takes the selector (a write on the real server): the next round loses.
    const auto key = make_election_keys(default_prefix, "callbacks").selector;
    srv.command({"HSET", key, "holder", "intruder", "epoch", "99"});
    ASSERT_TRUE(log.wait_for('R', 1, 3s));
    EXPECT_FALSE(e.is_leader());
    srv.command({"DEL", key});
    ASSERT_TRUE(log.wait_for('E', 2, 3s));
    EXPECT_TRUE(e.resign());
    ASSERT_TRUE(log.wait_for('R', 2, 3s));
    ASSERT_TRUE(log.wait_for('E', 3, 3s));  // no other candidate: it comes back after the hold
    e.stop();

    auto ev = log.events();
    EXPECT_TRUE(election_test::paired(ev));
    EXPECT_EQ(log.count('E'), log.count('R'));  // stop() resigned the last leadership
    EXPECT_FALSE(log.concurrent());
    EXPECT_EQ(log.threads(), 1u);
    std::vector<revoke_reason> reasons;
    for (auto& x : ev)
        if (x.kind == 'R') reasons.push_back(x.reason);
    ASSERT_EQ(reasons.size(), 3u);
    EXPECT_EQ(reasons[0], revoke_reason::lost);
    EXPECT_EQ(reasons[1], revoke_reason::resigned);
    EXPECT_EQ(reasons[2], revoke_reason::resigned);
    // The intruder was reported as the holder in between.
    EXPECT_TRUE(std::any_of(ev.begin(), ev.end(),
                            [](auto& x) { return x.kind == 'C' && x.identity == "intruder"; }));
    // After the intruder the epoch floor kept the epochs increasing (99 was seen).
    std::vector<std::uint64_t> epochs;
    for (auto& x : ev)
        if (x.kind == 'E') epochs.push_back(x.epoch);
    EXPECT_GT(epochs[1], 99u);
}

TEST(LeaderElector, DestructorResignsAndNeverHangs) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    {
        leader_elector e(pool, "dtor", opts("gone", 5s));
        e.start();
        ASSERT_TRUE(eventually([&] { return e.is_leader(); }, 3s));
    }
    EXPECT_TRUE(
        srv.command({"EXISTS", make_election_keys(default_prefix, "dtor").selector}).integer() ==
        0);
    // Destroying an elector that never started, and one whose server is gone, is quick.
    { leader_elector idle(pool, "dtor", opts("idle", 5s)); }
    const auto t0 = std::chrono::steady_clock::now();
    {
        leader_elector e(pool, "dtor2", opts("x", 600ms));
        e.start();
        ASSERT_TRUE(eventually([&] { return e.is_leader(); }, 3s));
        srv.kill();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 8s);
}

TEST(LeaderElector, CallbackExceptionsDoNotStopDelivery) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    leader_elector e(pool, "throws", opts("t", 400ms));
    event_log log(e);  // connected first: a throwing slot skips the later slots of its signal
    const auto throwing = e.on_elected([](std::uint64_t) { throw std::runtime_error("user bug"); });
    e.start();
    ASSERT_TRUE(log.wait_for('E', 1, 3s));
    e.resign();
    ASSERT_TRUE(log.wait_for('R', 1, 3s));
}

// The destructor racing an explicit stop() (or several shutdown paths at once) must neither
// join a thread twice nor return before the threads are joined.
TEST(LeaderElector, M2_ConcurrentStopsNeverDoubleJoin) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    for (int round = 0; round < 10; ++round) {
        leader_elector e(pool, "m2", opts("s", 300ms));
        e.start();
        ASSERT_TRUE(eventually([&] { return e.is_leader(); }, 3s));
        std::latch go(8);
        std::vector<std::thread> stoppers;
        for (int i = 0; i < 8; ++i)
            stoppers.emplace_back([&] {
                go.arrive_and_wait();
                e.stop();
                // Every stop() returns only once the elector is stopped.
                EXPECT_FALSE(e.is_leader());
            });
        for (auto& t : stoppers) t.join();
        EXPECT_EQ(
            srv.command({"EXISTS", make_election_keys(default_prefix, "m2").selector}).integer(),
            0);
    }  // and the destructor's stop() after them
}

namespace {
// The m1 window, held open: the resigner's campaign thread has passed its hold-back check and
// not yet taken round_mu when resign() runs.
struct m1_window {
    static inline std::mutex mu;
    static inline std::condition_variable cv;
    static inline std::atomic<bool> armed{false};
    static inline bool reached = false, resigned = false;
    static void hook(const std::string& identity) {
        if (identity != "resigner" || !armed.exchange(false)) return;
        std::unique_lock lk(mu);
        reached = true;
        cv.notify_all();
        cv.wait_for(lk, 5s, [] { return resigned; });
    }
};
}  // namespace

// resign() must hand off: the resigner may not win its own handoff at once, even when its
// campaign thread was already past the hold-back check.
TEST(LeaderElector, M1_ResignerDoesNotReelectItselfFromTheHoldBackWindow) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    leader_elector r(pool, "m1", opts("resigner", 1500ms)), f(pool, "m1", opts("follower", 1500ms));
    event_log rlog(r);
    r.start();
    ASSERT_TRUE(eventually([&] { return r.is_leader(); }, 3s));
    f.start();
    ASSERT_TRUE(eventually([&] { return f.rounds() >= 1; }, 3s));
    std::this_thread::sleep_for(200ms);  // the follower's handoff subscription is confirmed
    redcoord::detail::election_before_round.store(&m1_window::hook);
    m1_window::armed = true;
    {
        std::unique_lock lk(m1_window::mu);
        ASSERT_TRUE(m1_window::cv.wait_for(lk, 3s, [] { return m1_window::reached; }));
    }
    EXPECT_TRUE(r.resign());
    {
        std::lock_guard g(m1_window::mu);
        m1_window::resigned = true;
    }
    m1_window::cv.notify_all();
    // The follower takes over on the handoff signal, long before the 1.5 s term could pass.
    EXPECT_TRUE(eventually([&] { return f.is_leader(); }, 1000ms))
        << "holder "
        << srv.command({"HGET", make_election_keys(default_prefix, "m1").selector, "holder"})
               .maybe_text()
               .value_or("none");
    EXPECT_EQ(rlog.count('E'), 1u) << "the resigner re-elected itself";
    redcoord::detail::election_before_round.store(nullptr);
    f.stop();
    r.stop();
}

// Two electors with one configured identity: a restarted process while its old incarnation
// still runs (paused, partitioned). They must not lead together under one epoch; the newer
// one leads only after the older one's leadership ended, with a greater epoch.
TEST(LeaderElector, M12_SameIdentityIncarnationsNeverShareALeadership) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    leader_elector old(pool, "m12", opts("node-1", 600ms)),
        restarted(pool, "m12", opts("node-1", 600ms));
    old.start();
    ASSERT_TRUE(eventually([&] { return old.is_leader(); }, 3s));
    const auto first = old.epoch();
    restarted.start();
    const auto until = std::chrono::steady_clock::now() + 1s;
    while (std::chrono::steady_clock::now() < until) {
        ASSERT_FALSE(old.is_leader() && restarted.is_leader())
            << "both lead under epoch " << restarted.epoch();
        ASSERT_FALSE(restarted.is_leader());  // the live incarnation keeps its leadership
        std::this_thread::sleep_for(5ms);
    }
    old.stop();
    ASSERT_TRUE(eventually([&] { return restarted.is_leader(); }, 3s));
    EXPECT_GT(restarted.epoch(), first);
    restarted.stop();
}

namespace {
std::size_t threads_now() {
    std::size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
        (void)e;
        ++n;
    }
    return n;
}
}  // namespace

// Issue 15: an elector owns no thread. Rounds and deadlines run on the runtime's timer
// thread, callbacks on its callback thread, the handoff listener on the shared pub/sub link;
// before, each elector added a campaign, a callback and a deadline thread and a subscriber.
TEST(LeaderElectorRuntime, TwentyElectorsAddNoThread) {
    local_server srv;
    auto rt = redcoord::runtime::create();  // its own runtime: what runs is this test's alone
    connection_pool pool(srv.endpoint(), {}, rt);
    std::vector<std::unique_ptr<leader_elector>> e;
    // The first elector brings the runtime's shared threads up (timer, callbacks, pub/sub).
    e.push_back(std::make_unique<leader_elector>(pool, "threads", opts("t0", 600ms)));
    std::atomic<int> elected{0};
    const auto counting = e.back()->on_elected([&](std::uint64_t) { ++elected; });
    e.back()->start();
    ASSERT_TRUE(eventually([&] { return e[0]->is_leader() && elected == 1; }, 3s));
    // The callback executor and the tick workers add a worker while a task waits behind a
    // busy one and drop it when idle (runtime.hpp), whatever the number of objects: count the
    // other threads.
    const auto fixed_threads = [&] {
        return threads_now() - rt->callbacks().threads() - rt->stats().tick_workers;
    };
    const auto before = fixed_threads();
    for (int i = 1; i <= 20; ++i) {
        e.push_back(std::make_unique<leader_elector>(pool, "threads",
                                                     opts("t" + std::to_string(i), 600ms)));
        e.back()->start();
    }
    ASSERT_TRUE(eventually(
        [&] { return std::all_of(e.begin(), e.end(), [](auto& x) { return x->rounds() >= 2; }); },
        5s));
    // Read twice over: a worker may start or end between the two counts.
    (void)eventually([&] { return fixed_threads() == before; }, 2s);
    const auto with_twenty = fixed_threads();
    std::cout << "[election] threads besides the callback workers: " << before
              << " with 1 elector started, " << with_twenty << " with 21 (callback workers "
              << rt->callbacks().threads() << ")\n";
    EXPECT_EQ(with_twenty, before);
    EXPECT_EQ(std::count_if(e.begin(), e.end(), [](auto& x) { return x->is_leader(); }), 1);
    // One subscription for the 21 handoff listeners.
    EXPECT_EQ(
        srv.command({"PUBSUB", "NUMSUB", make_election_keys(default_prefix, "threads").channel})
            .elements()[1]
            .integer(),
        1);
    e.clear();  // destructors stop and resign; none hangs
    EXPECT_LE(fixed_threads(), before);
    EXPECT_EQ(rt->stats().pubsub_interests, 0u);
}

// stop() and start() in quick succession, while the timer tick may still be finishing: the
// restarted elector must campaign again every time (a stale disarm must not strand it).
TEST(LeaderElectorRuntime, QuickRestartsKeepCampaigning) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    leader_elector e(pool, "restarts", opts("r", 300ms));
    event_log log(e);
    for (int i = 1; i <= 20; ++i) {
        e.start();
        ASSERT_TRUE(eventually([&] { return e.is_leader(); }, 3s)) << "restart " << i;
        e.stop();
        EXPECT_FALSE(e.is_leader());
    }
    EXPECT_TRUE(election_test::paired(log.events()));
    EXPECT_EQ(log.count('E'), 20u);
    EXPECT_EQ(log.count('R'), 20u);
}

// F10 (2026-11-28 correctness review): with replicas > 0 a round ignored its lease bound
// (borrow, EVALSHA and WAIT ran with the endpoint's timeouts), so a leader whose master
// stalled heard of its step-down only after the whole command_timeout. The revoke must come
// near the lease end.
TEST(LeaderElector, F10_ARoundWithReplicasIsBoundedByTheLease) {
    local_server master;
    auto replica = local_server::acknowledging_replica_of(master);
    auto ep = master.endpoint();
    ep.command_timeout = 6s;  // far beyond the lease, so an unbounded round shows
    connection_pool pool(ep);
    auto o = opts("f10", 900ms);
    o.replication.replicas = 1;
    leader_elector e(pool, "f10", o);
    std::atomic<bool> revoked{false};
    auto c = e.on_revoked([&](revoke_reason) { revoked = true; });
    e.start();
    ASSERT_TRUE(eventually([&] { return e.is_leader(); }, 5s));
    master.pause();
    const auto paused = std::chrono::steady_clock::now();
    ASSERT_TRUE(eventually([&] { return revoked.load(); }, 10s));
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - paused);
    // The lease ends at most a term after the pause; an unbounded round took 6 s or more.
    EXPECT_LT(took, 3s) << "the leader heard of its step-down " << took.count()
                        << " ms after its master stalled";
    master.resume();
    e.stop();
}
