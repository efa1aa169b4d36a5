// Redlock under a seeded schedule of minority partitions and holder pauses past the TTL, on
// three lock hosts and a resource host that applies the fencing check; three clients in
// their own namespaces. The histories must show no two overlapping holdings and no stale
// write accepted.

#include <redcoord/testing/clock_skew.hpp>
#include <redcoord/testing/history.hpp>
#include <redcoord/testing/local_network.hpp>

#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <random>
#include <thread>

using namespace std::chrono_literals;
using redcoord::testing::local_network;
namespace history = redcoord::testing::history;
namespace fs = std::filesystem;

namespace {

struct counts {
    std::size_t holds = 0, accepted = 0, rejected = 0;
};

counts count(const std::vector<history::event>& h) {
    counts c;
    for (const auto& e : h) {
        if (e.op == "hold") ++c.holds;
        if (e.op == "write") ++(e.ok ? c.accepted : c.rejected);
    }
    return c;
}

struct outcome {
    counts c;
    std::vector<history::violation> violations;
    std::size_t partitions = 0, pauses = 0, restarts = 0;
    [[nodiscard]] bool broke(const std::string& rule) const {
        for (const auto& v : violations)
            if (v.rule == rule) return true;
        return false;
    }
    [[nodiscard]] std::string report() const {
        std::string s;
        for (const auto& v : violations) s += v.rule + ": " + v.what + "\n";
        return s;
    }
};

// Three lock hosts, a resource host, three clients for `seconds`; with `faults`, every
// 300-700 ms one fault undone 300-900 ms later: one client cut from one master (a minority)
// or a client paused past the 300 ms TTL. `mode` is the clients' CHAOS_MODE.
// `rates`: each master's clock rate (libfaketime), 1 for a real clock.
// `restart_after`: instead of partitions and pauses, SIGKILL a random master every 100-300 ms
// and start it again (no persistence) after this long.
outcome run_schedule(unsigned seed, bool faults, const std::string& mode, int seconds,
                     std::vector<double> rates = {1, 1, 1},
                     std::optional<std::chrono::milliseconds> restart_after = std::nullopt) {
    std::mt19937 rng(seed);
    local_network net;
    const std::size_t masters = rates.size(), clients = 3;
    std::vector<std::size_t> hosts, cs;
    for (double r : rates) {
        redcoord::testing::server_options o;
        if (r != 1) o.launcher = redcoord::testing::clock_rate_launcher(r);
        hosts.push_back(net.add_host(o));
    }
    const auto resource = net.add_host();
    for (std::size_t i = 0; i < clients; ++i) cs.push_back(net.add_client());

    const fs::path dir = fs::temp_directory_path() / ("rc-chaos-" + std::to_string(::getpid()) + "-" + std::to_string(seed));
    fs::create_directories(dir);
    std::vector<redcoord::testing::process> procs;
    for (std::size_t i = 0; i < clients; ++i) {
        std::vector<std::string> argv{CHAOS_LOCK_CLIENT, "c" + std::to_string(i), (dir / "history.log").string(),
                                      std::to_string(seconds), "300", net.url(cs[i], resource)};
        for (auto hst : hosts) argv.push_back(net.url(cs[i], hst));
        redcoord::testing::process_options po;
        po.output_file = (dir / ("client" + std::to_string(i) + ".out")).string();
        po.env = {"CHAOS_MODE=" + mode};
        procs.push_back(net.start(cs[i], argv, po));
    }
    outcome out;
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds - 1);
    while (restart_after && std::chrono::steady_clock::now() < end) {
        std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(100, 300)(rng)));
        net.restart(hosts[std::uniform_int_distribution<std::size_t>(0, masters - 1)(rng)], *restart_after);
        ++out.restarts;
    }
    while (faults && std::chrono::steady_clock::now() < end) {
        std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(300, 700)(rng)));
        const auto c = std::uniform_int_distribution<std::size_t>(0, clients - 1)(rng);
        const auto undo_after = std::chrono::milliseconds(std::uniform_int_distribution<int>(300, 900)(rng));
        if (std::uniform_int_distribution<int>(0, 1)(rng) == 0) {
            net.partition({{cs[c], hosts[std::uniform_int_distribution<std::size_t>(0, masters - 1)(rng)]}});
            ++out.partitions;
            std::this_thread::sleep_for(undo_after);
            net.heal();
        } else {
            procs[c].signal(SIGSTOP);
            ++out.pauses;
            std::this_thread::sleep_for(undo_after);
            procs[c].signal(SIGCONT);
        }
    }
    for (auto& p : procs) EXPECT_EQ(p.wait_for(20s), std::optional<int>(0)) << "a client did not finish";
    const auto h = history::read_log((dir / "history.log").string());
    out.c = count(h);
    out.violations = history::check_lock(h);
    std::printf("chaos lock seed %u mode '%s': %zu partitions, %zu pauses, %zu restarts, %zu holdings, "
                "%zu writes accepted, %zu rejected, %zu violations\n",
                seed, mode.c_str(), out.partitions, out.pauses, out.restarts, out.c.holds, out.c.accepted,
                out.c.rejected, out.violations.size());
    fs::remove_all(dir);
    return out;
}

}  // namespace

TEST(ChaosLock, RedlockKeepsExclusionUnderMinorityPartitionsAndPausedHolders) {
    if (auto why = local_network::unavailable_reason()) GTEST_SKIP() << *why;
    const auto o = run_schedule(17, true, "", 8);
    EXPECT_TRUE(o.violations.empty()) << "seed 17\n" << o.report();
    // The schedule must have exercised the lock: holdings, and writes through the fence.
    EXPECT_GT(o.c.holds, 20u);
    EXPECT_GT(o.c.accepted, 10u);
    EXPECT_GT(o.partitions + o.pauses, 5u);
}

// Deliberately broken: holders keep working for twice the TTL. The checker must see their
// holdings overlap, and the resource's fencing must reject their late writes.
TEST(ChaosLock, AHolderOutlivingItsValidityIsCaughtAndFencingRejectsItsLateWrites) {
    if (auto why = local_network::unavailable_reason()) GTEST_SKIP() << *why;
    const auto o = run_schedule(18, false, "overrun", 4);
    EXPECT_TRUE(o.broke("mutual exclusion")) << o.report();
    EXPECT_GT(o.c.rejected, 0u);
    EXPECT_FALSE(o.broke("stale write rejected")) << o.report();
}

// Deliberately broken twice over: overrunning holders and a resource without the fencing
// check. The checker must see stale writes accepted.
TEST(ChaosLock, AResourceWithoutTheFencingCheckIsCaught) {
    if (auto why = local_network::unavailable_reason()) GTEST_SKIP() << *why;
    const auto o = run_schedule(19, false, "unfenced", 4);
    EXPECT_TRUE(o.broke("stale write rejected")) << o.report();
}

// Clock drift within the allowance: every master's clock 0.5% fast (the drift factor is 1%
// of the TTL plus 2 ms). Holders work to the end of their validity.
TEST(ChaosLock, SkewWithinTheDriftAllowanceKeepsExclusion) {
    if (auto why = local_network::unavailable_reason()) GTEST_SKIP() << *why;
    const auto o = run_schedule(20, false, "long", 5, {1.005, 1.005, 1.005});
    EXPECT_TRUE(o.violations.empty()) << o.report();
    EXPECT_GT(o.c.holds, 5u);
}

// Past the allowance on ONE master of three: its keys vanish at 2/3 of the TTL. A minority,
// yet enough: the holder may have got its majority with that master and one other, and a
// contender then makes a majority of the fast master and the third. The drift bound must
// hold for every master, as the Redlock page assumes. The checker must catch the overlap.
TEST(ChaosLock, OneMasterPastTheDriftAllowanceIsEnoughToBreakExclusion) {
    if (auto why = local_network::unavailable_reason()) GTEST_SKIP() << *why;
    const auto o = run_schedule(21, false, "long", 5, {1.5, 1, 1});
    EXPECT_TRUE(o.broke("mutual exclusion")) << o.report();
    EXPECT_FALSE(o.broke("stale write rejected")) << o.report();
}

// The Redlock page's crash-recovery case: a master restarted without persistence forgets the
// keys it held. Restarted at once, it can give a second client a majority while the first
// still holds; restarted only after a TTL (the page's "delayed restart"), every key it forgot
// has expired anyway.
TEST(ChaosLock, RestartsWithoutPersistenceAreSafeOnlyWhenDelayedByATtl) {
    if (auto why = local_network::unavailable_reason()) GTEST_SKIP() << *why;
    const auto delayed = run_schedule(22, false, "long", 6, {1, 1, 1}, std::chrono::milliseconds(350));
    EXPECT_TRUE(delayed.violations.empty()) << delayed.report();
    EXPECT_GT(delayed.restarts, 3u);
    const auto at_once = run_schedule(23, false, "long", 6, {1, 1, 1}, std::chrono::milliseconds(0));
    EXPECT_TRUE(at_once.broke("mutual exclusion")) << "restarts at once broke nothing this run: " << at_once.restarts
                                                   << " restarts, " << at_once.c.holds << " holdings";
}
