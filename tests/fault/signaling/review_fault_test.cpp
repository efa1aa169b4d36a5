// Review 2026-11-23, signaling findings that need a real process to die or stall: S1 (a
// member SIGKILLed inside a double barrier), S2 (a member stalled past its lease and not
// counted), S8 (a reset while a member is stalled).
#include <redcoord/core/pool.hpp>
#include <redcoord/signaling/barrier.hpp>
#include <redcoord/signaling/double_barrier.hpp>
#include <redcoord/signaling/signal_hub.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/process.hpp>

#include <gtest/gtest.h>

#include <csignal>
#include <optional>
#include <set>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using redcoord::testing::local_server;
using redcoord::testing::process;

namespace {

class ReviewFaults : public ::testing::Test {
protected:
    local_server master;
    redcoord::connection_pool pool{master.endpoint()};
    redcoord::signal_hub hub{pool};

    process child(const char* mode, const std::string& name, int parties,
                  std::chrono::milliseconds lease, const std::string& result_key) {
        return process({CHILD_PATH, mode, std::to_string(master.port()), name,
                        std::to_string(parties), std::to_string(lease.count()), result_key});
    }
    // The value the child SET under `key`, waiting up to `limit` for it.
    std::optional<std::string> result(const std::string& key,
                                      std::chrono::milliseconds limit = 5000ms) {
        const auto until = std::chrono::steady_clock::now() + limit;
        for (;;) {
            if (auto v = master.command({"GET", key}).maybe_text()) return *v;
            if (std::chrono::steady_clock::now() >= until) return std::nullopt;
            std::this_thread::sleep_for(10ms);
        }
    }
    // Waits until `n` arrivals are counted at barrier `b`.
    static void arrivals(redcoord::barrier& b, std::size_t n) {
        for (int i = 0; i < 1000 && b.arrived() < n; ++i) std::this_thread::sleep_for(5ms);
        ASSERT_EQ(b.arrived(), n);
    }
};

TEST_F(ReviewFaults, S1_KilledMemberDoesNotWedgeTheDoubleBarrier) {
    const redcoord::barrier_options o{.arrival_lease = 500ms};
    auto kid = child("enter_report", "s1", 3, o.arrival_lease, "s1:kid");
    redcoord::double_barrier a(hub, "s1", 3, o), b(hub, "s1", 3, o);
    std::thread t([&] { EXPECT_NO_THROW(a.enter(10s)); });
    EXPECT_NO_THROW(b.enter(10s));
    t.join();
    ASSERT_EQ(result("s1:kid"), "inside");
    kid.kill();  // SIGKILL inside the barrier: its destructor's leave never runs
    // The two survivors' leave completes once the dead member's lease runs out.
    const auto start = std::chrono::steady_clock::now();
    std::thread tl([&] { EXPECT_NO_THROW(a.leave(3s)); });
    EXPECT_NO_THROW(b.leave(3s));
    tl.join();
    EXPECT_LT(std::chrono::steady_clock::now() - start, o.arrival_lease + 1500ms);
    // And the barrier is reusable: a fresh round of three enters and leaves.
    std::vector<std::unique_ptr<redcoord::double_barrier>> fresh;
    for (int i = 0; i < 3; ++i)
        fresh.push_back(std::make_unique<redcoord::double_barrier>(hub, "s1", 3, o));
    std::vector<std::thread> ts;
    for (auto& m : fresh)
        ts.emplace_back([&m] {
            EXPECT_NO_THROW(m->enter(3s));
            if (m->inside()) EXPECT_NO_THROW(m->leave(3s));
        });
    for (auto& th : ts) th.join();
}

TEST_F(ReviewFaults, S2_LapsedUncountedBarrierMemberIsNotToldItPassed) {
    // Parties 2: A arrives and stalls past its lease; B and C then complete generation 0
    // without it. A, resumed, must not report that it passed generation 0.
    const redcoord::barrier_options o{.arrival_lease = 300ms};
    redcoord::barrier b(hub, "s2", 2, o), c(hub, "s2", 2, o);
    auto kid = child("arrive_report", "s2", 2, o.arrival_lease, "s2:kid");
    arrivals(b, 1);
    kid.signal(SIGSTOP);
    std::this_thread::sleep_for(o.arrival_lease + 300ms);
    std::thread t([&] { EXPECT_NO_THROW(EXPECT_EQ(b.arrive_and_wait(5s), 0u)); });
    EXPECT_EQ(c.arrive_and_wait(5s), 0u);
    t.join();
    kid.signal(SIGCONT);
    auto r = result("s2:kid");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->rfind("error:", 0), 0u) << *r;
    EXPECT_NE(r->find("lease"), std::string::npos) << *r;
}

TEST_F(ReviewFaults, S2_LapsedUncountedDoubleBarrierMemberIsNotToldItIsInside) {
    const redcoord::barrier_options o{.arrival_lease = 300ms};
    auto kid = child("enter_report", "s2d", 2, o.arrival_lease, "s2d:kid");
    redcoord::double_barrier b(hub, "s2d", 2, o), c(hub, "s2d", 2, o);
    std::this_thread::sleep_for(200ms);  // the child entered (and waits for a second member)
    kid.signal(SIGSTOP);
    std::this_thread::sleep_for(o.arrival_lease + 300ms);
    std::thread t([&] { EXPECT_NO_THROW(b.enter(5s)); });
    EXPECT_NO_THROW(c.enter(5s));
    t.join();
    kid.signal(SIGCONT);
    auto r = result("s2d:kid");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->rfind("error:", 0), 0u) << *r;
    // The two counted members complete their round without the stray one.
    std::thread tl([&] { EXPECT_NO_THROW(b.leave(3s)); });
    EXPECT_NO_THROW(c.leave(3s));
    tl.join();
}

TEST_F(ReviewFaults, S8_ResetIsNotReadAsPassedByAStalledMember) {
    // Generation 0 passes; the child arrives in generation 1 and stalls past its lease; the
    // barrier is reset (allowed: no live arrival). Resumed, the child must not report a pass.
    const redcoord::barrier_options o{.arrival_lease = 300ms};
    redcoord::barrier b(hub, "s8r", 2, o), c(hub, "s8r", 2, o);
    std::thread t([&] { EXPECT_NO_THROW((void)b.arrive_and_wait(5s)); });
    (void)c.arrive_and_wait(5s);
    t.join();
    ASSERT_EQ(b.generation(), 1u);
    auto kid = child("arrive_report", "s8r", 2, o.arrival_lease, "s8r:kid");
    arrivals(b, 1);
    kid.signal(SIGSTOP);
    std::this_thread::sleep_for(o.arrival_lease + 300ms);
    b.reset();
    EXPECT_EQ(b.generation(), 0u);
    kid.signal(SIGCONT);
    auto r = result("s8r:kid");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->rfind("error:", 0), 0u) << *r;
}

}  // namespace

namespace {

TEST(ReviewReplayFaults, S5_ReplicaResyncReplayIsNotDeliveredTwice) {
    // The replica loses its master link (CLIENT KILL TYPE master) while the master publishes
    // far more signals than the dedup window holds; the replica then partially resyncs and
    // replays them over its own, still open, link to the hub: late, in a burst, beyond the
    // window. Each must still reach the waiter once.
    local_server master;
    auto replica = local_server::replica_of(master);
    redcoord::connection_pool pool(master.endpoint());
    redcoord::signal_options o;
    o.dedup_window = 16;
    redcoord::signal_hub hub(pool, {replica->endpoint()}, o);
    auto w = hub.listen({"s5"});
    for (int i = 0; i < 500 && hub.connected_links() < 2; ++i) std::this_thread::sleep_for(10ms);
    ASSERT_EQ(hub.connected_links(), 2u);
    const auto resyncs = [&] {
        auto info = replica->command({"INFO", "replication"}).text();
        return info.find("master_link_status:up") != std::string::npos;
    };
    ASSERT_GE(replica->command({"CLIENT", "KILL", "TYPE", "master"}).integer(), 1);
    constexpr int n = 200;
    for (int i = 0; i < n; ++i) hub.broadcast("s5", std::to_string(i));
    for (int i = 0; i < 500 && !resyncs(); ++i) std::this_thread::sleep_for(10ms);
    ASSERT_TRUE(resyncs());
    // Every copy has arrived once the replica's copies are all in (or a generous bound).
    for (int i = 0; i < 300 && hub.stats().received < 2u * n; ++i) {
        (void)w.pending();
        std::this_thread::sleep_for(10ms);
    }
    std::set<std::string> got;
    int twice = 0;
    while (auto s = w.wait(200ms)) twice += got.insert(s->payload).second ? 0 : 1;
    EXPECT_EQ(got.size(), static_cast<std::size_t>(n));
    EXPECT_EQ(twice, 0) << "signals delivered twice after the replica's resync";
    EXPECT_GE(hub.stats().received, 2u * n - 16)
        << "the replica did not replay: the test proved nothing";
}

}  // namespace
