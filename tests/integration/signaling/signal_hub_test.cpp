// signal_hub against a real master and a real replica (docs/signaling.md, signal/wait).
#include <redcoord/core/errors.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/signaling/signal_hub.hpp>
#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

using namespace std::chrono_literals;
using redcoord::signal_hub;
using redcoord::testing::local_server;

namespace {

class SignalHub : public ::testing::Test {
protected:
    void SetUp() override {
        replica = local_server::replica_of(master);
        // The master streams PUBLISH to the replica only once it counts it online.
        for (int i = 0;
             i < 500 && master.command({"INFO", "replication"}).text().find("state=online") ==
                            std::string::npos;
             ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        pool = std::make_unique<redcoord::connection_pool>(master.endpoint());
        hub = std::make_unique<signal_hub>(*pool,
                                           std::vector<redcoord::endpoint>{replica->endpoint()});
    }
    // Waits until every link of `h` is up (so each signal arrives over both).
    static void all_links_up(signal_hub& h, std::size_t n = 2) {
        for (int i = 0; i < 500 && h.connected_links() < n; ++i) std::this_thread::sleep_for(10ms);
        ASSERT_EQ(h.connected_links(), n);
    }
    // Waits until `server` lists a subscriber of `channel`.
    static void listed_on(local_server& server, const std::string& channel, const char* which) {
        for (int i = 0; i < 500; ++i) {
            auto r = server.command({"PUBSUB", "NUMSUB", channel});
            if (r.elements()[1].integer() > 0) return;
            std::this_thread::sleep_for(10ms);
        }
        FAIL() << which << " never saw the subscription to " << channel;
    }
    // Waits until the replica also lists `channel` (the subscription reached both links).
    void on_replica(const std::string& channel) { listed_on(*replica, channel, "replica"); }
    // Waits until both links carry `channel`: each link then delivers every signal in publish
    // order (a link subscribed late could deliver a later signal before the other link
    // finishes reading an earlier, larger one).
    void on_both(const std::string& channel) {
        listed_on(master, channel, "master");
        on_replica(channel);
    }
    local_server master;
    std::unique_ptr<local_server> replica;
    std::unique_ptr<redcoord::connection_pool> pool;
    std::unique_ptr<signal_hub> hub;
};

TEST_F(SignalHub, BroadcastWakesAWaiterOnceDespiteTwoLinks) {
    auto w = hub->listen({"jobs"});
    // Both links must carry the channel before the signal: a master link still subscribing
    // counts no receiver, and the duplicate to drop never comes.
    on_both("jobs");
    EXPECT_EQ(hub->broadcast("jobs", "go"), 1u);  // one pub/sub connection on the master
    auto s = w.wait(3000ms);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->payload, "go");
    EXPECT_EQ(s->channel, "jobs");
    EXPECT_FALSE(s->plain);
    // The replica's copy arrives too and must be dropped.
    for (int i = 0; i < 300 && hub->stats().duplicates == 0; ++i) std::this_thread::sleep_for(10ms);
    EXPECT_EQ(hub->stats().duplicates, 1u);
    EXPECT_FALSE(w.wait(200ms));
}

TEST_F(SignalHub, BinarySafePayloadsIncludingOneMebibyte) {
    auto w = hub->listen({"bin"});
    on_both("bin");
    const std::string nasty("\0\r\n\0rc\1x\r\n", 10);
    std::string big(1 << 20, '\0');
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 131 % 256);
    hub->broadcast("bin", nasty);
    hub->broadcast("bin", big);
    hub->broadcast("bin", "");
    auto a = w.wait(3000ms), b = w.wait(5000ms), c = w.wait(3000ms);
    ASSERT_TRUE(a && b && c);
    EXPECT_EQ(a->payload, nasty);
    EXPECT_EQ(b->payload, big);
    EXPECT_EQ(c->payload, "");
}

TEST_F(SignalHub, ChannelNamesWithGlobCharactersAreLiteral) {
    auto w = hub->listen({"a*[b]?"});
    auto other = hub->listen({"axbq"});
    hub->broadcast("a*[b]?", "literal");
    auto s = w.wait(3000ms);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->payload, "literal");
    EXPECT_FALSE(other.wait(200ms));
}

TEST_F(SignalHub, BadInputIsRejectedClearly) {
    EXPECT_THROW(hub->broadcast("", "x"), redcoord::invalid_argument);
    EXPECT_THROW(hub->broadcast("a\r\nb", "x"), redcoord::invalid_argument);
    EXPECT_THROW((void)hub->unicast("", "x"), redcoord::invalid_argument);
    EXPECT_THROW((void)hub->listen({}), redcoord::invalid_argument);
    EXPECT_THROW((void)hub->listen({"ok", ""}), redcoord::invalid_argument);
    EXPECT_THROW((void)hub->wait(std::string(2000, 'x'), 10ms), redcoord::invalid_argument);
    EXPECT_THROW((void)hub->on("", [](const redcoord::signal&) {}), redcoord::invalid_argument);
    EXPECT_THROW((void)hub->on("c", {}), redcoord::invalid_argument);
    redcoord::signal_options bad;
    bad.dedup_window = 0;
    EXPECT_THROW(signal_hub(*pool, {}, bad), redcoord::invalid_argument);
}

TEST_F(SignalHub, SignalPublishedBeforeSubscribingIsNotSeen) {
    // Pub/sub keeps nothing: this is documented behaviour, and why barrier/latch use keys.
    EXPECT_EQ(hub->broadcast("early", "lost"), 0u);
    auto w = hub->listen({"early"});
    EXPECT_FALSE(w.wait(300ms));
    EXPECT_FALSE(w.try_wait());
    hub->broadcast("early", "seen");
    auto s = w.wait(3000ms);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->payload, "seen");
}

TEST_F(SignalHub, TryWaitDoesNotBlock) {
    auto w = hub->listen({"t"});
    auto start = std::chrono::steady_clock::now();
    EXPECT_FALSE(w.try_wait());
    EXPECT_LT(std::chrono::steady_clock::now() - start, 100ms);
    hub->broadcast("t", "1");
    for (int i = 0; i < 300 && w.pending() == 0; ++i) std::this_thread::sleep_for(10ms);
    auto s = w.try_wait();
    ASSERT_TRUE(s);
    EXPECT_EQ(s->payload, "1");
    EXPECT_FALSE(hub->try_wait("t"));  // nothing arrives while subscribing
}

TEST_F(SignalHub, WaitTimesOut) {
    auto start = std::chrono::steady_clock::now();
    EXPECT_FALSE(hub->wait("quiet", 200ms));
    EXPECT_GE(std::chrono::steady_clock::now() - start, 200ms);
}

TEST_F(SignalHub, WaitAnySaysWhichChannelFired) {
    std::optional<redcoord::signal> got;
    std::thread t([&] { got = hub->wait_any({"a", "b", "c"}, 5000ms); });
    for (int i = 0;
         i < 500 && master.command({"PUBSUB", "NUMSUB", "b"}).elements()[1].integer() == 0; ++i)
        std::this_thread::sleep_for(10ms);
    hub->broadcast("b", "from-b");
    t.join();
    ASSERT_TRUE(got);
    EXPECT_EQ(got->channel, "b");
    EXPECT_EQ(got->payload, "from-b");
}

TEST_F(SignalHub, WaitAllNeedsEveryChannel) {
    std::optional<std::vector<redcoord::signal>> got;
    std::thread t([&] { got = hub->wait_all({"x", "y", "x"}, 5000ms); });
    for (int i = 0;
         i < 500 && master.command({"PUBSUB", "NUMSUB", "y"}).elements()[1].integer() == 0; ++i)
        std::this_thread::sleep_for(10ms);
    hub->broadcast("y", "1");
    hub->broadcast("y", "2");  // a second signal on the same channel does not complete it
    hub->broadcast("x", "3");
    t.join();
    ASSERT_TRUE(got);
    ASSERT_EQ(got->size(), 2u);
    EXPECT_EQ((*got)[0].channel, "x");
    EXPECT_EQ((*got)[0].payload, "3");
    EXPECT_EQ((*got)[1].channel, "y");
    EXPECT_EQ((*got)[1].payload, "1");
    EXPECT_FALSE(hub->wait_all({"x", "never"}, 200ms));
}

TEST_F(SignalHub, PatternWaits) {
    auto w = hub->listen_pattern({"job.*"});
    hub->broadcast("other", "no");
    hub->broadcast("job.42", "yes");
    auto s = w.wait(3000ms);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->channel, "job.42");
    EXPECT_EQ(s->pattern, "job.*");
    EXPECT_EQ(s->payload, "yes");
    EXPECT_FALSE(w.wait(300ms));  // the replica's copy was dropped
    auto w2 = hub->wait_pattern("nothing.*", 100ms);
    EXPECT_FALSE(w2);
}

TEST_F(SignalHub, PlainPublishWakesWaitersOncePerLink) {
    auto w = hub->listen({"plain"});
    on_replica("plain");
    all_links_up(*hub);
    master.command({"PUBLISH", "plain", "from-cli"});
    auto a = w.wait(3000ms);
    ASSERT_TRUE(a);
    EXPECT_EQ(a->payload, "from-cli");
    EXPECT_TRUE(a->plain);
    // No envelope, no id: the replica's copy cannot be told apart, so it is delivered too.
    auto b = w.wait(3000ms);
    ASSERT_TRUE(b);
    EXPECT_EQ(b->payload, "from-cli");
    EXPECT_FALSE(w.wait(200ms));
}

TEST_F(SignalHub, UnicastReachesExactlyOneWaiterFairly) {
    constexpr int waiters = 10, signals = 1000;
    std::vector<redcoord::waiter> ws;
    for (int i = 0; i < waiters; ++i) ws.push_back(hub->listen_unicast("work"));
    for (auto& w : ws) on_replica(hub->unicast_prefix("work") + w.id());
    // A broadcast waiter on the same name and a unicast waiter of a longer name are not targets.
    auto bystander = hub->listen({"work"});
    auto longer = hub->listen_unicast("work}:x");
    for (int i = 0; i < signals; ++i) ASSERT_TRUE(hub->unicast("work", std::to_string(i)));
    auto pending = [&] {
        std::size_t n = 0;
        for (auto& w : ws) n += w.pending();
        return n;
    };
    for (int i = 0; i < 1000 && pending() < signals; ++i) std::this_thread::sleep_for(10ms);
    std::this_thread::sleep_for(
        200ms);  // replica copies, were they not dropped, would be queued by now
    std::set<std::string> seen;
    std::vector<int> share(waiters, 0);
    for (int i = 0; i < waiters; ++i) {
        while (auto s = ws[i].try_wait()) {
            EXPECT_EQ(s->channel, "work");
            EXPECT_TRUE(seen.insert(s->payload).second) << "delivered twice: " << s->payload;
            ++share[i];
        }
    }
    EXPECT_EQ(seen.size(), static_cast<std::size_t>(signals));
    // Expected 100 each (binomial sd ~9.5); fewer than 50 means the choice is not random.
    for (int i = 0; i < waiters; ++i) EXPECT_GE(share[i], 50) << "waiter " << i;
    EXPECT_FALSE(bystander.try_wait());
    EXPECT_FALSE(longer.try_wait());
    EXPECT_FALSE(hub->unicast("nobody", "x"));
}

TEST_F(SignalHub, UnicastWaitHelper) {
    std::optional<redcoord::signal> got;
    std::thread t([&] { got = hub->wait_unicast("u*[1]", 5000ms); });
    bool sent = false;
    for (int i = 0; i < 500 && !sent; ++i) {
        sent = hub->unicast("u*[1]", "only-one");
        if (!sent) std::this_thread::sleep_for(10ms);
    }
    t.join();
    ASSERT_TRUE(sent);
    ASSERT_TRUE(got);
    EXPECT_EQ(got->payload, "only-one");
    EXPECT_EQ(got->channel, "u*[1]");
}

TEST_F(SignalHub, CallbacksRunInOrderOnOneThreadAndSurviveThrowingSlots) {
    std::mutex mu;
    std::vector<std::string> got;
    std::set<std::thread::id> threads;
    std::atomic<int> reported{0};
    redcoord::signal_options o;
    o.on_slot_error = [&](const redcoord::signal& s, std::exception_ptr) {
        EXPECT_EQ(s.payload, "boom");
        ++reported;
    };
    signal_hub h(*pool, {replica->endpoint()}, o);
    auto c1 = h.on("cb", [&](const redcoord::signal& s) {
        if (s.payload == "boom") throw std::runtime_error("slot failed");
        std::lock_guard lk(mu);
        got.push_back(s.payload);
        threads.insert(std::this_thread::get_id());
    });
    auto c2 = h.on_pattern("cb*", [&](const redcoord::signal& s) {
        std::lock_guard lk(mu);
        got.push_back("p:" + s.payload);
        threads.insert(std::this_thread::get_id());
    });
    on_replica("cb");
    for (int i = 0; i < 20; ++i) h.broadcast("cb", i == 5 ? "boom" : std::to_string(i));
    for (int i = 0; i < 500; ++i) {
        {
            std::lock_guard lk(mu);
            if (got.size() >= 39) break;
        }
        std::this_thread::sleep_for(10ms);
    }
    std::this_thread::sleep_for(200ms);  // duplicates would show up by now
    std::lock_guard lk(mu);
    ASSERT_EQ(got.size(), 39u);
    std::vector<std::string> plain, pat;
    for (auto& g : got) (g.rfind("p:", 0) == 0 ? pat : plain).push_back(g);
    ASSERT_EQ(plain.size(), 19u);
    ASSERT_EQ(pat.size(), 20u);
    for (int i = 0, j = 0; i < 20; ++i) {
        if (i != 5) EXPECT_EQ(plain[j++], std::to_string(i));
        EXPECT_EQ(pat[i], "p:" + (i == 5 ? std::string("boom") : std::to_string(i)));
    }
    EXPECT_EQ(threads.size(), 1u);
    EXPECT_NE(*threads.begin(), std::this_thread::get_id());
    EXPECT_EQ(reported.load(), 1);
    EXPECT_EQ(h.stats().slot_errors, 1u);
}

TEST_F(SignalHub, DisconnectingTheLastSlotUnsubscribes) {
    std::atomic<int> calls{0};
    {
        auto c = hub->on("scoped", [&](const redcoord::signal&) { ++calls; });
        // on() returns once one link confirms; the replica's may come first (often over TLS),
        // and PUBLISH on the master counts only the master's subscribers.
        all_links_up(*hub);
        EXPECT_EQ(hub->broadcast("scoped", "1"), 1u);
        for (int i = 0; i < 300 && calls.load() == 0; ++i) std::this_thread::sleep_for(10ms);
        EXPECT_EQ(calls.load(), 1);
    }
    for (int i = 0;
         i < 300 && master.command({"PUBSUB", "NUMSUB", "scoped"}).elements()[1].integer() != 0;
         ++i)
        std::this_thread::sleep_for(10ms);
    EXPECT_EQ(hub->broadcast("scoped", "2"), 0u);
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(calls.load(), 1);
}

TEST_F(SignalHub, WaitersOfOneChannelShareTheSubscription) {
    auto a = hub->listen({"shared"});
    {
        auto b = hub->listen({"shared"});
        hub->broadcast("shared", "both");
        ASSERT_TRUE(a.wait(3000ms));
        ASSERT_TRUE(b.wait(3000ms));
    }
    // b's destruction must not unsubscribe a.
    std::this_thread::sleep_for(100ms);
    hub->broadcast("shared", "still");
    auto s = a.wait(3000ms);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->payload, "still");
}

TEST_F(SignalHub, WaitersReturnWhenTheHubGoes) {
    auto w = hub->listen({"bye"});
    std::thread t([&] {
        std::this_thread::sleep_for(100ms);
        hub.reset();
    });
    auto start = std::chrono::steady_clock::now();
    EXPECT_FALSE(w.wait(10000ms));
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5000ms);
    t.join();
    EXPECT_FALSE(w.try_wait());
}

TEST(SignalHubNoServer, ListenThrowsWhenNoLinkComesUp) {
    redcoord::endpoint nowhere;
    nowhere.port = redcoord::testing::free_port();
    redcoord::connection_pool p(nowhere);
    redcoord::signal_options o;
    o.subscribe_timeout = 200ms;
    signal_hub h(p, {}, o);
    EXPECT_THROW((void)h.listen({"x"}), redcoord::connection_error);
}

// Issue 33: a 40 MB signal was reported sent to one receiver while the server's default
// `client-output-buffer-limit pubsub 32mb 8mb 60` dropped that receiver's connection, so the
// signal was lost. A payload above signal_options::max_payload (8 MiB, the stock soft limit)
// is refused before anything is sent.
class Signal : public ::testing::Test {
protected:
    static constexpr std::size_t mib8 = std::size_t{8} << 20;
    // PUBLISH and unicast script calls the server has run (INFO commandstats).
    [[nodiscard]] long long sends() const {
        return master.command_calls("publish") + master.command_calls("evalsha") +
               master.command_calls("eval");
    }
    local_server master;
    redcoord::connection_pool pool{master.endpoint()};
};

TEST_F(Signal, OversizedPayloadIsRefusedBeforeSending) {
    signal_hub hub(pool);
    auto all = hub.listen({"big"});
    auto one = hub.listen_unicast("big");
    const std::string over(mib8 + 1, 'x');
    const auto before = sends();
    EXPECT_THROW(hub.broadcast("big", over), redcoord::payload_too_large);
    EXPECT_THROW((void)hub.unicast("big", over), redcoord::payload_too_large);
    EXPECT_EQ(sends(), before) << "nothing may reach the server";
    EXPECT_FALSE(all.wait(300ms));
    EXPECT_FALSE(one.wait(300ms));
    // The links were never at risk: a small signal still arrives on both waiters.
    EXPECT_EQ(hub.broadcast("big", "small"), 1u);
    EXPECT_TRUE(hub.unicast("big", "small"));
    EXPECT_TRUE(all.wait(3000ms));
    EXPECT_TRUE(one.wait(3000ms));
}

TEST_F(Signal, PayloadOfExactlyMaxPayloadIsDelivered) {
    signal_hub hub(pool);
    auto all = hub.listen({"edge"});
    auto one = hub.listen_unicast("edge");
    std::string edge(mib8, '\0');
    for (std::size_t i = 0; i < edge.size(); ++i) edge[i] = static_cast<char>(i * 131 % 256);
    EXPECT_EQ(hub.broadcast("edge", edge), 1u);
    EXPECT_TRUE(hub.unicast("edge", edge));
    auto a = all.wait(10000ms), b = one.wait(10000ms);
    ASSERT_TRUE(a && b);
    EXPECT_TRUE(a->payload == edge) << "broadcast payload differs (" << a->payload.size() << ")";
    EXPECT_TRUE(b->payload == edge) << "unicast payload differs (" << b->payload.size() << ")";
}

TEST_F(Signal, RaisedMaxPayloadLetsALargerSignalThrough) {
    redcoord::signal_options o;
    o.max_payload = mib8 + 1024;
    signal_hub hub(pool, {}, o);
    auto all = hub.listen({"raised"});
    const std::string larger(mib8 + 1024, 'y');
    EXPECT_EQ(hub.broadcast("raised", larger), 1u);
    auto s = all.wait(10000ms);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->payload.size(), larger.size());
    EXPECT_TRUE(s->payload == larger);
    // The raised limit is still a limit.
    EXPECT_THROW(hub.broadcast("raised", larger + "z"), redcoord::payload_too_large);
    EXPECT_FALSE(all.wait(300ms));
}

}  // namespace

// Links read on demand with no drain during the test: a blocked waiter and a slot must
// still be served as signals arrive (they raise the links' demand), and a waiter that is
// not blocked reads the socket itself.
TEST_F(SignalHub, OnDemandLinksServeBlockedWaitersSlotsAndPollers) {
    redcoord::signal_options o;
    o.link.health_interval = 0ms;
    o.link.tuning.drain_interval = 60000ms;
    signal_hub lazy(*pool, {replica->endpoint()}, o);
    all_links_up(lazy);

    auto blocked = lazy.listen({"blocked"});
    on_replica("blocked");
    // The readers watched while the subscription was confirmed; within one tick (1 s with
    // the health check off) they are back on their drain timers.
    std::this_thread::sleep_for(1500ms);
    std::thread later([&] {
        std::this_thread::sleep_for(300ms);
        hub->broadcast("blocked", "late");
    });
    const auto start = std::chrono::steady_clock::now();
    auto s = blocked.wait(10000ms);
    later.join();
    ASSERT_TRUE(s);
    EXPECT_EQ(s->payload, "late");
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5000ms);  // not left to a drain

    auto polled = lazy.listen({"polled"});
    hub->broadcast("polled", "p");
    std::optional<redcoord::signal> got;
    for (int i = 0; i < 300 && !got; ++i) {
        got = polled.try_wait();  // reads the sockets on this thread
        if (!got) std::this_thread::sleep_for(10ms);
    }
    ASSERT_TRUE(got);
    EXPECT_EQ(got->payload, "p");

    std::atomic<int> calls{0};
    auto slot = lazy.on("cb", [&](const redcoord::signal&) { ++calls; });
    on_replica("cb");
    hub->broadcast("cb", "c");
    for (int i = 0; i < 300 && calls == 0; ++i) std::this_thread::sleep_for(10ms);
    EXPECT_EQ(calls.load(), 1);
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(calls.load(), 1);  // the replica's copy was read and dropped, not run twice
}
