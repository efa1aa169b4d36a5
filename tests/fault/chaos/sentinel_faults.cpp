#include "sentinel_faults.hpp"

#include <redcoord/core/errors.hpp>
#include <redcoord/testing/wait.hpp>

#include <optional>
#include <string>
#include <thread>

namespace chaos {

using redcoord::testing::local_network;

sentinel_group add_sentinel_group(local_network& net) {
    sentinel_group g;
    g.master = net.add_host();
    for (int i = 0; i < 2; ++i) g.replicas.push_back(net.add_replica(g.master));
    local_network::sentinel_settings s;
    s.service = chaos_service;
    s.quorum = 2;
    s.down_after = std::chrono::milliseconds(500);
    s.failover_timeout = std::chrono::milliseconds(2000);
    g.sentinels = net.add_sentinels(g.master, 3, s);
    return g;
}

namespace {

// Waits until the sentinels name a master other than `old` (up to `wait`); true when they do.
bool wait_promoted(local_network& net, const sentinel_group& g, std::size_t old,
                   std::chrono::milliseconds wait) {
    return redcoord::testing::eventually(
        [&] {
            const auto m = net.sentinels_master(g.sentinels, chaos_service);
            return m && *m != old;
        },
        wait, std::chrono::milliseconds(20));
}

// Makes the old master `old` a replica of the master the sentinels name, if they name another.
void rejoin(local_network& net, const sentinel_group& g, std::size_t old) {
    const auto now = net.sentinels_master(g.sentinels, chaos_service);
    if (!now || *now == old) return;
    try {
        (void)net.host(old).command(
            {"REPLICAOF", net.service_address(*now), std::to_string(net.host(*now).port())});
    } catch (const redcoord::error&) {
        // Not up yet, or gone: Sentinel turns it into a replica later.
    }
}

}  // namespace

void sentinel_failovers(local_network& net, const sentinel_group& g, std::mt19937& rng,
                        std::chrono::steady_clock::time_point end, outcome_base& out) {
    auto between = [&](int lo, int hi) {
        return std::chrono::milliseconds(std::uniform_int_distribution<int>(lo, hi)(rng));
    };
    while (std::chrono::steady_clock::now() < end) {
        std::this_thread::sleep_for(between(2000, 3000));
        const auto named = net.sentinels_master(g.sentinels, chaos_service);
        if (!named) continue;  // a failover still settling
        const std::size_t master = *named;
        if (std::uniform_int_distribution<int>(0, 1)(rng) == 0) {
            net.host(master).kill();
            out.failovers += wait_promoted(net, g, master, std::chrono::seconds(10));
            net.host(master).restart();
            ++out.restarts;
            rejoin(net, g, master);
        } else {
            std::vector<local_network::link> cut;
            for (auto n : g.replicas)
                if (n != master) cut.push_back({master, n});
            if (master != g.master) cut.push_back({master, g.master});
            for (auto n : g.sentinels) cut.push_back({master, n});
            net.partition(cut);
            ++out.partitions;
            const auto healed_at = std::chrono::steady_clock::now() + between(2500, 3500);
            out.failovers += wait_promoted(net, g, master, between(2500, 3500));
            std::this_thread::sleep_until(healed_at);
            net.heal();
            rejoin(net, g, master);
        }
    }
}

}  // namespace chaos
