// Signaling on the process runtime: hubs, barriers and double barriers own no thread and no
// connection; every hub of the process listens through one pub/sub connection per server.
#include <redcoord/core/pool.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/signaling/barrier.hpp>
#include <redcoord/signaling/double_barrier.hpp>
#include <redcoord/signaling/latch.hpp>
#include <redcoord/signaling/signal_hub.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using redcoord::testing::eventually;
using redcoord::testing::local_server;
using redcoord::testing::process_threads;

namespace {

// Pub/sub connections the server has (CLIENT LIST TYPE pubsub: one line per connection).
std::size_t pubsub_connections(const local_server& s) {
    std::istringstream in(s.command({"CLIENT", "LIST", "TYPE", "pubsub"}).text());
    std::size_t n = 0;
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) ++n;
    return n;
}

long long numsub(const local_server& s, const std::string& channel) {
    return s.command({"PUBSUB", "NUMSUB", channel}).elements().at(1).integer();
}

TEST(SignalingRuntime, TwentyHubsBarriersAndDoubleBarriersInsideAddNoThreadAndShareOneConnection) {
    local_server master;
    auto replica = local_server::replica_of(master);
    ASSERT_TRUE(eventually([&] {
        return master.command({"INFO", "replication"}).text().find("state=online") !=
               std::string::npos;
    }));
    redcoord::connection_pool pool(master.endpoint());

    // One hub with a waiter, a slot and a double barrier inside: the runtime's threads (pub/sub
    // reader and dialer, timer, callbacks) are all running from here on.
    redcoord::signal_hub first(pool, {replica->endpoint()});
    auto first_waiter = first.listen({"shared"});
    std::atomic<int> slot_calls{0};
    auto first_slot = first.on("shared", [&](const redcoord::signal&) { ++slot_calls; });
    redcoord::double_barrier first_inside(first, "inside-0", 1, {.arrival_lease = 600ms});
    first_inside.enter(5s);
    ASSERT_TRUE(eventually([&] { return first.connected_links() == 2; }));
    // Tick workers beyond the first join in only while ticks wait behind busy ones (a loaded
    // machine) and leave when idle: count the other threads.
    const auto& rt = pool.runtime();
    const auto fixed_threads = [&] { return process_threads() - rt->stats().tick_workers; };
    const std::size_t base = fixed_threads();

    constexpr int n = 20;
    std::vector<std::unique_ptr<redcoord::signal_hub>> hubs;
    std::vector<redcoord::waiter> waiters;
    std::vector<boost::signals2::scoped_connection> slots;
    std::vector<std::unique_ptr<redcoord::barrier>> barriers;
    std::vector<std::unique_ptr<redcoord::double_barrier>> inside;
    for (int i = 0; i < n; ++i) {
        hubs.push_back(std::make_unique<redcoord::signal_hub>(
            pool, std::vector<redcoord::endpoint>{replica->endpoint()}));
        auto& h = *hubs.back();
        waiters.push_back(h.listen({"shared"}));
        slots.push_back(h.on("shared", [&](const redcoord::signal&) { ++slot_calls; }));
        barriers.push_back(std::make_unique<redcoord::barrier>(h, "b-" + std::to_string(i), 1));
        EXPECT_EQ(barriers.back()->arrive_and_wait(5s),
                  0u);  // passes; keeps its channel subscribed
        inside.push_back(std::make_unique<redcoord::double_barrier>(
            h, "inside-" + std::to_string(i + 1), 1,
            redcoord::barrier_options{.arrival_lease = 600ms}));
        inside.back()->enter(5s);  // its lease heartbeat now runs
    }
    const std::size_t after = fixed_threads();
    std::cout << "[signaling/runtime] threads with one hub " << base
              << ", with 20 more hubs, barriers and double barriers inside " << after
              << "; pub/sub connections: master " << pubsub_connections(master) << ", replica "
              << pubsub_connections(*replica) << "\n";
    EXPECT_LE(after, base + 2) << "20 hubs + 20 barriers + 20 double barriers inside: " << base
                               << " -> " << after << " threads";

    // One pub/sub connection per server for all 21 hubs, and one SUBSCRIBE per channel.
    EXPECT_EQ(pubsub_connections(master), 1u);
    EXPECT_TRUE(eventually([&] { return pubsub_connections(*replica) == 1u; }))
        << "replica: " << pubsub_connections(*replica) << " pub/sub connections";
    EXPECT_EQ(numsub(master, "shared"), 1);
    EXPECT_TRUE(eventually([&] { return numsub(*replica, "shared") == 1; }));

    // Several leases later every member's lease still ends in the future (server time): the
    // heartbeats run on the timer thread.
    std::this_thread::sleep_for(2000ms);
    const auto t = master.command({"TIME"});
    const auto now_ms =
        std::stoll(t.elements().at(0).text()) * 1000 + std::stoll(t.elements().at(1).text()) / 1000;
    for (int i = 0; i <= n; ++i) {
        const std::string key =
            "redcoord:double_barrier:{inside-" + std::to_string(i) + "}:members";
        EXPECT_EQ(master.command({"ZCOUNT", key, "(" + std::to_string(now_ms), "+inf"}).integer(),
                  1)
            << key;
    }
    for (auto& d : inside) EXPECT_NO_THROW(d->leave(5s));
    EXPECT_NO_THROW(first_inside.leave(5s));

    // Every waiter of every hub gets a signal once, every slot runs once, although each
    // signal arrives over two links and is dispatched to 21 listeners per link.
    ASSERT_TRUE(eventually([&] { return first.connected_links() == 2; }));
    first.broadcast("shared", "all");
    ASSERT_TRUE(first_waiter.wait(5s));
    for (auto& w : waiters) {
        auto s = w.wait(5s);
        ASSERT_TRUE(s);
        EXPECT_EQ(s->payload, "all");
    }
    EXPECT_TRUE(eventually([&] { return slot_calls.load() == n + 1; }));
    std::this_thread::sleep_for(200ms);  // the replica's copies are in by now
    EXPECT_EQ(slot_calls.load(), n + 1);
    EXPECT_FALSE(first_waiter.try_wait());
    for (auto& w : waiters) EXPECT_FALSE(w.try_wait());
}

TEST(SignalingRuntime, TwoHubsOnOneChannelShareOneSubscribeAndTheLastOneUnsubscribes) {
    local_server master;
    redcoord::connection_pool pool(master.endpoint());
    auto a = std::make_unique<redcoord::signal_hub>(pool);
    redcoord::signal_hub b(pool);
    auto wa = a->listen({"both"});
    auto wb = b.listen({"both"});
    EXPECT_EQ(numsub(master, "both"), 1);
    EXPECT_EQ(b.broadcast("both", "x"), 1u);  // one connection received it
    ASSERT_TRUE(wa.wait(3s));
    ASSERT_TRUE(wb.wait(3s));
    a.reset();  // a's subscription goes; b's stays
    EXPECT_TRUE(wa.wait(0ms) == std::nullopt);
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(numsub(master, "both"), 1);
    b.broadcast("both", "y");
    auto s = wb.wait(3s);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->payload, "y");
    { auto drop = std::move(wb); }
    EXPECT_TRUE(eventually([&] { return numsub(master, "both") == 0; }));
}

}  // namespace
