// Issue 23's scenario with real processes: fresh processes looping lock() while one master
// is SIGKILLed and another SIGSTOPped, and while a majority is paused.
#include <redcoord/core/endpoint.hpp>
#include <redcoord/lock/redlock.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/process.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <sstream>
#include <thread>

// A namespace of its own: a unity batch compiles this file with others (tests/CMakeLists.txt).
namespace redlock_issue23_test {

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::local_server;
using redcoord::testing::process;
using clock_type = std::chrono::steady_clock;

namespace {
constexpr int processes = 4;

std::int64_t steady_ns(clock_type::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

std::int64_t counter(local_server& s, const std::string& key) {
    auto v = s.command({"GET", key});
    return v.is_nil() ? 0 : std::stoll(v.text());
}

struct lock_call {
    std::int64_t start_ns;
    std::chrono::microseconds took;
};

std::vector<lock_call> lock_calls(local_server& checker, const std::string& run) {
    std::vector<lock_call> out;
    const auto list = checker.command({"LRANGE", run + ":lat", "0", "-1"});
    for (auto& e : list.elements()) {
        std::istringstream in(e.text());
        std::int64_t start = 0, us = 0;
        in >> start >> us;
        out.push_back({start, std::chrono::microseconds(us)});
    }
    return out;
}

std::vector<process> spawn(const std::string& run, double seconds, local_server& checker,
                           const std::vector<std::unique_ptr<local_server>>& masters) {
    std::vector<process> children;
    for (int i = 0; i < processes; ++i) {
        std::vector<std::string> argv{FAULT_CHILD_PATH, run, std::to_string(seconds),
                                      std::to_string(checker.port())};
        for (auto& m : masters) argv.push_back(std::to_string(m->port()));
        children.emplace_back(std::move(argv));
    }
    return children;
}

// Every child ended cleanly; no exception out of lock(); the sections never overlapped and
// the read-modify-write counter lost no update. Returns the exceptions seen.
std::int64_t check_run(local_server& checker, const std::string& run,
                       std::vector<process>& children) {
    for (auto& c : children) {
        auto st = c.wait_for(60s);
        EXPECT_TRUE(st.has_value()) << "child hung";
        if (st) EXPECT_EQ(*st, 0);
    }
    const auto exceptions = counter(checker, run + ":exceptions");
    const auto errors = checker.command({"LRANGE", run + ":errors", "0", "4"});
    for (auto& e : errors.elements()) ADD_FAILURE() << run << ": lock() threw: " << e.text();
    EXPECT_EQ(counter(checker, run + ":overlaps"), 0)
        << run << ": two holders were in the section at once";
    EXPECT_EQ(counter(checker, run + ":counter"), counter(checker, run + ":sections"))
        << run << ": a lost update";
    EXPECT_GE(counter(checker, run + ":sections"), processes);
    return exceptions;
}

double percentile_ms(std::vector<std::chrono::microseconds> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const auto i =
        std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())));
    return static_cast<double>(v[i].count()) / 1000.0;
}
}  // namespace

// 5 masters; each repetition SIGKILLs one and SIGSTOPs another for 0.6 s and at that moment
// starts 4 fresh processes (cold pools) looping lock()/unlock() on one redlock. Three nodes
// stay healthy, so lock() must never throw and the sections must exclude.
TEST(RedlockIssue23, FreshProcessesRideThroughAKilledAndAPausedMaster) {
    auto masters = redcoord::testing::start_masters(5);
    local_server checker;
    constexpr int repetitions = 10;
    std::int64_t exceptions = 0, sections = 0;
    std::vector<std::chrono::microseconds> in_window;
    for (int rep = 0; rep < repetitions; ++rep) {
        const std::string run = "kill-stop-" + std::to_string(rep);
        auto& killed = *masters[static_cast<std::size_t>(rep % 5)];
        auto& paused = *masters[static_cast<std::size_t>((rep + 2) % 5)];
        killed.kill();
        paused.pause();
        const auto fault_start = clock_type::now();
        auto children = spawn(run, 1.2, checker, masters);
        std::this_thread::sleep_until(fault_start + 600ms);
        paused.resume();
        const auto fault_end = clock_type::now();
        exceptions += check_run(checker, run, children);
        sections += counter(checker, run + ":sections");
        for (auto& c : lock_calls(checker, run))
            if (c.start_ns < steady_ns(fault_end)) in_window.push_back(c.took);
        killed.restart();  // the next repetition uses another resource: no holding to forget
    }
    std::cout << "issue23: " << exceptions << " exceptions from lock() in " << repetitions
              << " repetitions (" << sections
              << " sections); lock() started during the fault window: n=" << in_window.size()
              << " p50=" << percentile_ms(in_window, 0.50)
              << " ms p99=" << percentile_ms(in_window, 0.99)
              << " ms max=" << percentile_ms(in_window, 1.0) << " ms" << std::endl;
    EXPECT_EQ(exceptions, 0);
}

// A majority paused for 1 s: fresh processes' lock() blocks until the nodes are back and
// then succeeds (no section starts before the resume); acquire(200ms) meanwhile throws
// quorum_unreachable once its 200 ms are over, not before.
TEST(RedlockIssue23, MajorityPausedForASecondBlocksLockAndTimesOutAcquire) {
    auto masters = redcoord::testing::start_masters(5);
    local_server checker;
    const std::string run = "majority-paused";
    for (int i : {0, 2, 4}) masters[static_cast<std::size_t>(i)]->pause();
    const auto paused_at = clock_type::now();
    auto children = spawn(run, 0.3, checker, masters);

    std::vector<std::unique_ptr<connection_pool>> pools;
    std::vector<connection_pool*> nodes;
    for (auto& m : masters) {
        pools.push_back(std::make_unique<connection_pool>(m->endpoint()));
        nodes.push_back(pools.back().get());
    }
    redlock a(nodes, "fault-" + run, {.timing = {.ttl = 2000ms}});
    auto t0 = clock_type::now();
    EXPECT_THROW((void)a.acquire(200ms), quorum_unreachable);
    const auto took = clock_type::now() - t0;
    EXPECT_GE(took, 200ms) << "gave up before its wait ended";
    EXPECT_LT(took, 700ms);
    std::cout << "issue23: acquire(200ms) with a majority paused threw after "
              << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms"
              << std::endl;

    std::this_thread::sleep_until(paused_at + 1s);
    const auto resumed_at = clock_type::now();
    for (int i : {0, 2, 4}) masters[static_cast<std::size_t>(i)]->resume();
    EXPECT_EQ(check_run(checker, run, children), 0);
    auto calls = lock_calls(checker, run);
    ASSERT_FALSE(calls.empty());
    for (auto& c : calls)
        EXPECT_GE(c.start_ns + c.took.count() * 1000, steady_ns(resumed_at) - 1'000'000)
            << "lock() returned while a majority was paused";
}

}  // namespace redlock_issue23_test
