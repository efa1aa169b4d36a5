// testing/local_network: every client reaches every host over its own link until the test
// cuts it; cuts are per link, both directions, and heal restores them. Real namespaces, real
// veth pairs, real redis-server and redis-cli processes.

#include <redcoord/core/errors.hpp>
#include <redcoord/testing/clock_skew.hpp>
#include <redcoord/testing/local_network.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::local_network;
using redcoord::testing::process_options;
namespace fs = std::filesystem;

namespace {

#define SKIP_WITHOUT_NAMESPACES()                                                 \
    do {                                                                          \
        if (auto why = local_network::unavailable_reason()) GTEST_SKIP() << *why; \
    } while (0)

struct probe_result {
    int status = -1;
    std::string output;
};

// `redis-cli -h ADDR -p PORT ARGS...` from `client`'s namespace, bounded by coreutils'
// timeout (a cut link drops the SYN, and redis-cli would wait for TCP to give up): 124 then.
probe_result cli_at(local_network& net, std::size_t client, const std::string& addr,
                    std::uint16_t port, std::vector<std::string> args) {
    static int n = 0;
    const fs::path out = fs::temp_directory_path() /
                         ("rcnet-test-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    std::vector<std::string> argv{"timeout", "2",  "redis-cli",         "-h",
                                  addr,      "-p", std::to_string(port)};
    argv.insert(argv.end(), args.begin(), args.end());
    process_options po;
    po.output_file = out.string();
    probe_result r;
    {
        auto p = net.start(client, argv, po);
        r.status = p.wait();
    }
    std::ifstream in(out);
    std::stringstream ss;
    ss << in.rdbuf();
    r.output = ss.str();
    fs::remove(out);
    return r;
}

probe_result cli_from(local_network& net, std::size_t client, std::size_t host,
                      std::vector<std::string> args) {
    const auto ep = net.endpoint(client, host);
    return cli_at(net, client, ep.host, ep.port, std::move(args));
}

bool reaches(local_network& net, std::size_t client, std::size_t host) {
    const auto r = cli_from(net, client, host, {"PING"});
    return r.status == 0 && r.output.find("PONG") != std::string::npos;
}

}  // namespace

TEST(LocalNetwork, EveryClientReachesEveryHostOverItsOwnLink) {
    SKIP_WITHOUT_NAMESPACES();
    local_network net;
    const auto h1 = net.add_host(), h2 = net.add_host();
    const auto c1 = net.add_client(), c2 = net.add_client();
    for (auto c : {c1, c2})
        for (auto h : {h1, h2}) EXPECT_TRUE(reaches(net, c, h)) << "client " << c << " host " << h;
    // Each pair has its own addresses.
    EXPECT_NE(net.address(c1, h1), net.address(c2, h1));
    EXPECT_NE(net.address(c1, h1), net.address(c1, h2));
    // Clients are not linked to each other, hosts only when asked.
    EXPECT_FALSE(net.address(c1, c2));
    EXPECT_FALSE(net.address(h1, h2));
    // The test process reaches hosts through their Unix sockets.
    EXPECT_TRUE(net.host(h1).command({"PING"}).is_status("PONG"));
    // A write through one client's link is seen through another's: one server per host.
    EXPECT_EQ(cli_from(net, c1, h1, {"SET", "k", "v"}).status, 0);
    EXPECT_EQ(cli_from(net, c2, h1, {"GET", "k"}).output, "v\n");
}

TEST(LocalNetwork, APartitionCutsExactlyTheLinksGivenUntilHealed) {
    SKIP_WITHOUT_NAMESPACES();
    local_network net;
    const auto h1 = net.add_host(), h2 = net.add_host();
    const auto c1 = net.add_client(), c2 = net.add_client();
    net.partition({{c1, h1}});
    EXPECT_FALSE(net.connected(c1, h1));
    const auto cut = cli_from(net, c1, h1, {"PING"});
    EXPECT_EQ(cut.status, 124) << cut.output;  // no answer, no reset: timed out
    EXPECT_TRUE(reaches(net, c1, h2));
    EXPECT_TRUE(reaches(net, c2, h1));
    // The server itself runs on: the test still reaches it, and c2 writes through.
    EXPECT_TRUE(net.host(h1).command({"PING"}).is_status("PONG"));
    net.heal();
    EXPECT_TRUE(net.connected(c1, h1));
    EXPECT_TRUE(reaches(net, c1, h1));
}

TEST(LocalNetwork, IsolateCutsEveryLinkOfOneNode) {
    SKIP_WITHOUT_NAMESPACES();
    local_network net;
    const auto h1 = net.add_host(), h2 = net.add_host();
    const auto c1 = net.add_client(), c2 = net.add_client();
    net.isolate(h1);
    EXPECT_FALSE(reaches(net, c1, h1));
    EXPECT_FALSE(reaches(net, c2, h1));
    EXPECT_TRUE(reaches(net, c1, h2));
    EXPECT_TRUE(reaches(net, c2, h2));
    net.heal();
    EXPECT_TRUE(reaches(net, c2, h1));
}

TEST(LocalNetwork, HostsAddedAfterClientsAreLinkedToThemAndHostsLinkOnRequest) {
    SKIP_WITHOUT_NAMESPACES();
    local_network net;
    const auto c1 = net.add_client();
    const auto h1 = net.add_host();
    EXPECT_TRUE(reaches(net, c1, h1));
    const auto h2 = net.add_host();
    net.link_hosts(h1, h2);
    // A replica on h2 follows the master on h1 over their link.
    const auto master = net.address(h2, h1);
    ASSERT_TRUE(master);
    net.host(h2).command({"REPLICAOF", *master, std::to_string(net.host(h1).port())});
    net.host(h1).command({"SET", "replicated", "yes"});
    bool seen = false;
    for (int i = 0; i < 200 && !seen; ++i) {
        seen = net.host(h2).command({"GET", "replicated"}).maybe_text() ==
               std::optional<std::string>("yes");
        if (!seen) std::this_thread::sleep_for(20ms);
    }
    EXPECT_TRUE(seen);
    EXPECT_THROW(net.link_hosts(h1, c1), invalid_argument);
}

TEST(LocalNetwork, RestartKeepsAddressAndPortAndForgetsDataWithoutPersistence) {
    SKIP_WITHOUT_NAMESPACES();
    local_network net;
    const auto h1 = net.add_host();
    const auto c1 = net.add_client();
    ASSERT_EQ(cli_from(net, c1, h1, {"SET", "lock", "token"}).status, 0);
    const auto before = net.endpoint(c1, h1);
    net.restart(h1, 100ms);
    const auto after = net.endpoint(c1, h1);
    EXPECT_EQ(before.host, after.host);
    EXPECT_EQ(before.port, after.port);
    EXPECT_TRUE(reaches(net, c1, h1));
    EXPECT_EQ(cli_from(net, c1, h1, {"GET", "lock"}).output, "\n");  // nil: forgotten
}

TEST(LocalNetwork, ClientProcessesRunInTheirNamespaceWithTheirOwnPid) {
    SKIP_WITHOUT_NAMESPACES();
    local_network net;
    const auto c1 = net.add_client();
    auto p = net.start(c1, {"sleep", "30"});
    // `ip netns exec` execs: the PID is sleep's, so SIGSTOP/SIGKILL reach the program itself.
    std::string comm;
    for (int i = 0; i < 100; ++i) {
        std::ifstream in("/proc/" + std::to_string(p.pid()) + "/comm");
        std::getline(in, comm);
        if (comm == "sleep") break;
        std::this_thread::sleep_for(10ms);
    }
    EXPECT_EQ(comm, "sleep");
    const auto ns_of = [](pid_t pid) {
        return fs::read_symlink("/proc/" + std::to_string(pid) + "/ns/net");
    };
    EXPECT_NE(ns_of(p.pid()), ns_of(::getpid()));
    p.kill();
}

TEST(LocalNetwork, TearDownRemovesNamespacesAndSweepsOnlyDeadRunsLeftovers) {
    SKIP_WITHOUT_NAMESPACES();
    // A leftover of a dead process (a pid that has just exited) and one of this live process.
    const pid_t dead = ::fork();
    if (dead == 0) ::_exit(0);
    ::waitpid(dead, nullptr, 0);
    const std::string stale = "rcnet" + std::to_string(dead) + "-9-h0";
    const std::string live = "rcnet" + std::to_string(::getpid()) + "-999-h0";
    ASSERT_EQ(std::system(("ip netns add " + stale).c_str()), 0);
    ASSERT_EQ(std::system(("ip netns add " + live).c_str()), 0);
    std::string mine;
    {
        local_network net;
        net.add_client();
        mine = net.namespace_of(0);
        EXPECT_TRUE(fs::exists("/run/netns/" + mine));
        EXPECT_FALSE(fs::exists("/run/netns/" + stale));  // swept: its process is gone
        EXPECT_TRUE(fs::exists("/run/netns/" + live));    // a live run's: left alone
    }
    EXPECT_FALSE(fs::exists("/run/netns/" + mine));
    EXPECT_EQ(std::system(("ip netns delete " + live).c_str()), 0);
}

TEST(LocalNetwork, AHostUnderFaketimeExpiresKeysFaster) {
    SKIP_WITHOUT_NAMESPACES();
    local_network net;
    redcoord::testing::server_options fast;
    fast.launcher = redcoord::testing::clock_rate_launcher(4);  // the server's clock runs 4x
    const auto h1 = net.add_host(fast);
    const auto h2 = net.add_host();
    for (auto h : {h1, h2}) net.host(h).command({"SET", "k", "v", "PX", "2000"});
    const auto start = std::chrono::steady_clock::now();
    while (net.host(h1).command({"EXISTS", "k"}).integer() == 1 &&
           std::chrono::steady_clock::now() - start < 5s)
        std::this_thread::sleep_for(10ms);
    const auto took = std::chrono::steady_clock::now() - start;
    // 2 s of its clock is 0.5 s of ours; the normal host still has the key then.
    EXPECT_LT(took, 1500ms);
    EXPECT_EQ(net.host(h2).command({"EXISTS", "k"}).integer(), 1);
}

TEST(LocalNetwork, ServiceAddressesReachAHostOverEachLinkAndFallSilentWithIt) {
    SKIP_WITHOUT_NAMESPACES();
    local_network net;
    const auto h1 = net.add_host(), h2 = net.add_host();
    const auto c1 = net.add_client(), c2 = net.add_client();
    EXPECT_NE(net.service_address(h1), net.service_address(h2));
    const auto port = net.host(h1).port();
    for (auto c : {c1, c2}) {
        const auto r = cli_at(net, c, net.service_address(h1), port, {"PING"});
        EXPECT_EQ(r.output, "PONG\n") << "client " << c;
    }
    net.partition({{c1, h1}});
    EXPECT_EQ(cli_at(net, c1, net.service_address(h1), port, {"PING"}).status, 124);
    EXPECT_EQ(cli_at(net, c2, net.service_address(h1), port, {"PING"}).output, "PONG\n");
    net.heal();
    EXPECT_EQ(cli_at(net, c1, net.service_address(h1), port, {"PING"}).output, "PONG\n");
}

// A master, its replica and three sentinels in namespaces, all naming each other by service
// addresses: cutting the master off from the sentinels and the replica makes them promote
// the replica, the clients find the new master through the sentinels, and once the cut heals
// the old master is turned into a replica.
TEST(LocalNetwork, SentinelsFailACutOffMasterOverToItsReplica) {
    SKIP_WITHOUT_NAMESPACES();
    local_network net;
    const auto master = net.add_host();
    const auto replica = net.add_replica(master);
    local_network::sentinel_settings s;
    s.service = "svc";
    const auto sentinels = net.add_sentinels(master, 3, s);
    const auto c = net.add_client();
    EXPECT_EQ(net.sentinels_master(sentinels, "svc"), std::optional<std::size_t>(master));
    const auto url = net.sentinel_url(sentinels, "svc");
    EXPECT_EQ(url.rfind("redis-sentinel://" + net.service_address(sentinels[0]) + ":", 0), 0u)
        << url;
    net.host(master).command({"SET", "k", "v"});
    net.host(master).command({"WAIT", "1", "1000"});
    EXPECT_EQ(net.host(replica).command({"GET", "k"}).maybe_text(),
              std::optional<std::string>("v"));

    std::vector<local_network::link> cut{{master, replica}};
    for (auto id : sentinels) cut.push_back({master, id});
    net.partition(cut);
    ASSERT_TRUE(redcoord::testing::eventually(
        [&] {
            return net.sentinels_master(sentinels, "svc") == std::optional<std::size_t>(replica);
        },
        10s, 20ms));
    // The client still reaches the old master (it is not cut from it) and the new one.
    const auto port = net.host(replica).port();
    EXPECT_EQ(cli_at(net, c, net.service_address(replica), port, {"GET", "k"}).output, "v\n");
    EXPECT_EQ(cli_at(net, c, net.service_address(master), net.host(master).port(), {"ROLE"})
                  .output.rfind("master", 0),
              0u);
    net.heal();
    // Sentinel turns an old master into a replica only after it has claimed the master role
    // for 8 s or more since coming back. While it turns, it may not answer at once (it drops
    // its data and loads the new master's, on its main thread): a timed-out ROLE is "not yet".
    EXPECT_TRUE(redcoord::testing::eventually(
        [&] {
            try {
                return net.host(master).command({"ROLE"}).elements().at(0).text() == "slave";
            } catch (const redcoord::timeout_error&) {
                return false;
            }
        },
        20s, 20ms));
}

// The launcher the clock-jump schedules start clients with: the wall clock follows the offset
// file at each reading, forward and back (CLOCK_MONOTONIC is left alone: DONT_FAKE_MONOTONIC).
TEST(LocalNetwork, AClientUnderAJumpingClockSeesItsWallClockJumpBothWays) {
    SKIP_WITHOUT_NAMESPACES();
    local_network net;
    const auto c = net.add_client();
    const fs::path dir = fs::temp_directory_path() / ("rcnet-clock-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const fs::path offset = dir / "offset", out = dir / "out";
    auto argv = redcoord::testing::wall_clock_jump_launcher(offset);
    // Wall seconds, then again after the offset moved back two days.
    argv.insert(argv.end(), {"sh", "-c",
                             "date +%s; while [ ! -e " + (dir / "go").string() +
                                 " ]; do sleep 0.01; done; date +%s"});
    redcoord::testing::write_clock_offset(offset, std::chrono::hours(24));
    process_options po;
    po.output_file = out.string();
    const auto real = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
    {
        auto p = net.start(c, argv, po);
        std::this_thread::sleep_for(200ms);
        redcoord::testing::write_clock_offset(offset, -std::chrono::hours(24));
        std::ofstream(dir / "go") << "1";
        EXPECT_EQ(p.wait(), 0);
    }
    std::ifstream in(out);
    long long ahead = 0, behind = 0;
    in >> ahead >> behind;
    EXPECT_NEAR(static_cast<double>(ahead - real), 86400.0, 30.0);
    EXPECT_NEAR(static_cast<double>(behind - real), -86400.0, 30.0);
    fs::remove_all(dir);
}
