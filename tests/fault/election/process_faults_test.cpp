// Candidates in child processes, faults by signal: SIGKILL of the leader, SIGSTOP past its term.

#include "child_log.hpp"

#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/process.hpp>

#include <gtest/gtest.h>

#include <csignal>
#include <map>
#include <thread>

using namespace std::chrono_literals;
using election_test::log_line;
using election_test::read_log;
using redcoord::testing::local_server;
using redcoord::testing::process;
using clk = std::chrono::steady_clock;

namespace {

constexpr auto term = 500ms;
constexpr auto retry = term / 3;

struct candidate {
    std::string id;
    std::string log;
    std::unique_ptr<process> proc;
    std::vector<log_line> lines() const { return read_log(log); }
};

candidate spawn(const local_server& srv, const std::string& name, const std::string& id) {
    candidate c{id, (srv.dir() / (id + ".log")).string(), nullptr};
    redcoord::testing::process_options po;
    po.output_file = c.log;
    c.proc = std::make_unique<process>(
        std::vector<std::string>{CHILD_PATH, std::to_string(srv.port()), name, id,
                                 std::to_string(term.count()), "60"},
        po);
    return c;
}

// Waits until some candidate other than `except` logs an `E` after `after`; returns its index.
int wait_elected(const std::vector<candidate>& cs, clk::time_point after,
                 std::chrono::milliseconds t, int except = -1, log_line* out = nullptr) {
    const auto until = clk::now() + t;
    while (clk::now() < until) {
        for (int i = 0; i < static_cast<int>(cs.size()); ++i) {
            if (i == except) continue;
            for (auto& l : cs[i].lines())
                if (l.kind == 'E' && l.at > after) {
                    if (out) *out = l;
                    return i;
                }
        }
        std::this_thread::sleep_for(5ms);
    }
    return -1;
}

// The recorder's verdict: each epoch belongs to one process, and the intervals in which the
// processes observed themselves leading (their `W` samples) never overlap.
::testing::AssertionResult no_two_leaders(const std::vector<candidate>& cs) {
    struct span {
        clk::time_point first, last;
        std::string who;
    };
    std::map<std::uint64_t, span> by_epoch;
    for (auto& c : cs)
        for (auto& l : c.lines()) {
            if (l.kind != 'W') continue;
            auto [it, fresh] = by_epoch.try_emplace(l.epoch, span{l.at, l.at, c.id});
            if (!fresh) {
                if (it->second.who != c.id)
                    return ::testing::AssertionFailure() << "epoch " << l.epoch << " led by "
                                                         << it->second.who << " and " << c.id;
                it->second.first = std::min(it->second.first, l.at);
                it->second.last = std::max(it->second.last, l.at);
            }
        }
    std::vector<span> spans;
    for (auto& [e, s] : by_epoch) spans.push_back(s);
    std::sort(spans.begin(), spans.end(), [](auto& a, auto& b) { return a.first < b.first; });
    for (std::size_t i = 1; i < spans.size(); ++i)
        if (spans[i].first <= spans[i - 1].last)
            return ::testing::AssertionFailure()
                   << spans[i - 1].who << " and " << spans[i].who << " led at once";
    if (spans.size() < 2)
        return ::testing::AssertionFailure() << "fewer than two leaderships recorded";
    return ::testing::AssertionSuccess();
}

}  // namespace

TEST(ElectionProcessFaults, KilledLeaderIsReplacedWithinTermPlusRetryPeriod) {
    local_server srv;
    std::vector<candidate> cs;
    for (int i = 0; i < 3; ++i) cs.push_back(spawn(srv, "crash", "p" + std::to_string(i)));
    int leader = wait_elected(cs, clk::time_point{}, 5s);
    ASSERT_GE(leader, 0);
    std::this_thread::sleep_for(300ms);
    for (int kill = 0; kill < 2; ++kill) {
        const auto killed_at = clk::now();
        cs[leader].proc->kill();  // SIGKILL: no resign, the selector must expire
        log_line elected;
        const int next = wait_elected(cs, killed_at, 5s, leader, &elected);
        ASSERT_GE(next, 0) << "no new leader after SIGKILL";
        // Behaviour bound: the selector expires within a term of the last renewal, and a
        // follower's next round comes within a retry period (slack for a loaded machine).
        EXPECT_LE(elected.at - killed_at, term + retry + 1500ms);
        leader = next;
        std::this_thread::sleep_for(200ms);
    }
    EXPECT_TRUE(no_two_leaders(cs));
}

TEST(ElectionProcessFaults, PausedLeaderStepsDownAndReportsRevokedBeforeAnyWork) {
    local_server srv;
    std::vector<candidate> cs;
    cs.push_back(spawn(srv, "pause", "first"));
    ASSERT_EQ(wait_elected(cs, clk::time_point{}, 5s), 0);
    cs.push_back(spawn(srv, "pause", "second"));
    std::this_thread::sleep_for(400ms);
    ASSERT_EQ(election_test::count(cs[1].lines(), 'E'), 0u);  // the live leader keeps winning

    const auto stopped_at = clk::now();
    cs[0].proc->signal(SIGSTOP);
    log_line elected;
    ASSERT_EQ(wait_elected(cs, stopped_at, 5s, 0, &elected), 1);
    std::this_thread::sleep_for(200ms);
    const auto resumed_at = clk::now();
    cs[0].proc->signal(SIGCONT);
    std::this_thread::sleep_for(600ms);
    cs[0].proc->kill();
    cs[1].proc->kill();

    auto a = cs[0].lines();
    std::uint64_t first_epoch = 0;
    for (auto& l : a)
        if (l.kind == 'E') {
            first_epoch = l.epoch;
            break;
        }
    EXPECT_GT(elected.epoch, first_epoch);
    // After SIGCONT the old leader's first event is `revoked`; no work follows until re-elected.
    std::optional<log_line> first_after;
    for (auto& l : a)
        if (l.at >= resumed_at && (!first_after || l.at < first_after->at)) first_after = l;
    ASSERT_TRUE(first_after) << "the resumed leader reported nothing";
    EXPECT_EQ(first_after->kind, 'R');
    for (auto& l : a)
        EXPECT_FALSE(l.kind == 'W' && l.at >= resumed_at) << "leader work after SIGCONT";
    EXPECT_TRUE(no_two_leaders(cs));
}
