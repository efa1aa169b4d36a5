// signal_hub across a real Sentinel failover: with the replicas Sentinel reports
// (discover_replicas), waiters keep receiving, each signal arrives exactly once, and the
// master link follows the sentinels to the promoted master.
#include <redcoord/core/errors.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/core/sentinel.hpp>
#include <redcoord/signaling/signal_hub.hpp>
#include <redcoord/testing/local_sentinel.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

using namespace redcoord;
using namespace std::chrono_literals;
using redcoord::testing::local_sentinel;
using redcoord::testing::local_sentinel_options;
using clock_type = std::chrono::steady_clock;

namespace {
constexpr auto failover_bound = 20s;
}

TEST(SignalingFailover, WaitersKeepReceivingWithoutDuplicates) {
    local_sentinel_options so;
    so.replicas = 2;
    local_sentinel svc(so);
    connection_pool pool(svc.endpoint(), {.max_size = 4});
    auto replicas = discover_replicas(svc.endpoint());
    ASSERT_EQ(replicas.size(), 2u);

    signal_hub receiver(pool, replicas);
    std::mutex mu;
    std::map<std::string, int> got;  // payload -> copies delivered
    auto slot = receiver.on("events", [&](const redcoord::signal& s) {
        std::lock_guard lk(mu);
        ++got[s.payload];
    });
    auto received = [&](const std::string& p) {
        std::lock_guard lk(mu);
        auto it = got.find(p);
        return it == got.end() ? 0 : it->second;
    };

    // No replicas given with a Sentinel pool: the hub asks the sentinels for them.
    signal_hub sender(pool);
    {
        const auto until = clock_type::now() + 5s;
        while (sender.connected_links() < 3 && clock_type::now() < until)
            std::this_thread::sleep_for(10ms);
        EXPECT_EQ(sender.connected_links(), 3u) << "master link + the 2 discovered replicas";
    }
    std::vector<std::string> delivered_before, delivered_after;  // broadcasts some link received
    std::atomic<bool> killed{false};
    auto publish = [&](int i) {
        std::string p = std::to_string(i);
        try {
            if (sender.broadcast("events", p) > 0)
                (killed ? delivered_after : delivered_before).push_back(p);
        } catch (const error&) {
            std::this_thread::sleep_for(5ms);  // master gone: Sentinel has not promoted yet
        }
    };
    int i = 0;
    for (; i < 200; ++i) publish(i);
    auto old = svc.kill_master();
    killed = true;
    const auto promoted = svc.wait_promoted(old, failover_bound);
    auto deadline = clock_type::now() + failover_bound;
    while (delivered_after.size() < 200 && clock_type::now() < deadline) publish(i++);
    ASSERT_GE(delivered_after.size(), 200u) << "broadcasts did not resume after the failover";

    // Every signal that reached a link is delivered exactly once: the promoted replica's
    // link never dropped, so nothing published after the failover is missed.
    auto all_in = [&] {
        for (auto& p : delivered_after)
            if (received(p) == 0) return false;
        return true;
    };
    auto until = clock_type::now() + 5s;
    while (!all_in() && clock_type::now() < until) std::this_thread::sleep_for(10ms);
    std::size_t missing_before = 0, missing_after = 0;
    for (auto& p : delivered_before) missing_before += received(p) == 0;
    for (auto& p : delivered_after) missing_after += received(p) == 0;
    EXPECT_EQ(missing_before, 0u);
    EXPECT_EQ(missing_after, 0u);

    // The master link was given the Sentinel endpoint: it follows the failover to the
    // promoted master and resubscribes there, so every link is up again and the promoted
    // server carries two of the receiver's subscriptions (its master and its replica link).
    auto* now_master = svc.server(promoted);
    ASSERT_NE(now_master, nullptr);
    auto subscribers_on_promoted = [&] {
        return now_master->command({"PUBSUB", "NUMSUB", "events"}).elements().at(1).integer();
    };
    std::size_t links = 0;
    long long numsub = 0;
    const auto relink_until = clock_type::now() + failover_bound;
    do {
        links = receiver.connected_links();
        numsub = subscribers_on_promoted();
        if (links == 3 && numsub == 2) break;
        std::this_thread::sleep_for(20ms);
    } while (clock_type::now() < relink_until);
    EXPECT_EQ(links, 3u) << "master link + 2 replica links should all be up after the failover";
    EXPECT_EQ(numsub, 2) << "the master link did not move to the promoted master";

    std::lock_guard lk(mu);
    for (auto& [p, n] : got) EXPECT_EQ(n, 1) << "signal " << p << " delivered " << n << " times";
    auto st = receiver.stats();
    EXPECT_GT(st.duplicates, 0u);  // copies did arrive over several links, and were dropped
    std::cout << "[sentinel/signaling] before " << delivered_before.size() << ", after "
              << delivered_after.size() << ", received " << st.received << " copies, dropped "
              << st.duplicates << " duplicates\n";
}
