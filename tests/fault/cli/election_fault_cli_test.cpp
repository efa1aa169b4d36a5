// `redcoord elect` with two candidates: exactly one CMD runs; when the leader's redcoord is
// SIGKILLed its CMD dies too (parent-death signal) and the other candidate's CMD takes over.
// A leader whose server stops answering stops its CMD before its term runs out.
#include "cli_harness.hpp"

#include <signal.h>

// A namespace of its own: a unity batch compiles this file with others (tests/CMakeLists.txt).
namespace election_fault_cli_test {

using namespace cli_test;

namespace {

struct ElectionFaultCli : ::testing::Test {
    redcoord::testing::local_server server;
    temp_dir dir;
    std::string url = server.url();
    std::string marks = dir.file("marks");

    std::unique_ptr<cli_process> candidate(const std::string& id) {
        return std::make_unique<cli_process>(
            std::vector<std::string>{"--redis", url, "elect", "svc", "--identity", id, "--term",
                                     "2s", "--grace", "200ms", "--", "sh", "-c",
                                     "trap 'echo term " + id + " >> " + marks +
                                         "; exit 0' TERM; echo run " + id + " $$ >> " + marks +
                                         "; while :; do sleep 0.05; done"},
            dir.file("out-" + id));
    }
    std::vector<std::string> runs() const {
        std::vector<std::string> out;
        for (auto& l : lines_of(read_file(marks)))
            if (l.rfind("run ", 0) == 0) out.push_back(l);
        return out;
    }
};

bool pid_gone(pid_t p) { return ::kill(p, 0) != 0 && errno == ESRCH; }

}  // namespace

TEST_F(ElectionFaultCli, OneLeaderRunsAndFollowerTakesOverWhenLeaderIsKilled) {
    auto a = candidate("a");
    auto b = candidate("b");
    ASSERT_TRUE(eventually([&] { return runs().size() == 1; })) << read_file(marks);
    std::this_thread::sleep_for(2500ms);  // > one term: still exactly one CMD
    auto first = runs();
    ASSERT_EQ(first.size(), 1u) << read_file(marks);
    std::istringstream in(first[0]);
    std::string w, id;
    pid_t pid = -1;
    in >> w >> id >> pid;
    auto& leader = id == "a" ? a : b;
    const std::string other = id == "a" ? "b" : "a";
    const auto l0 = run(dir, {"--redis", url, "leader", "svc"});
    ASSERT_EQ(l0.output.substr(0, 2), id + " ") << l0.output;
    const auto first_epoch = std::stoull(l0.output.substr(2));

    leader->kill();  // SIGKILL the leader's redcoord
    EXPECT_TRUE(eventually([&] { return pid_gone(pid); }, 5s))
        << "the dead leader's CMD still runs";
    EXPECT_TRUE(contains(read_file(marks), "term " + id));
    // The follower is elected once the term expires (2 s) and runs its CMD.
    ASSERT_TRUE(eventually([&] { return runs().size() == 2; }, 10s)) << read_file(marks);
    EXPECT_EQ(runs()[1].substr(0, 5), "run " + other);
    // A new leadership: the follower, under a greater epoch than the first leader's.
    auto l = run(dir, {"--redis", url, "leader", "svc"});
    ASSERT_EQ(l.output.substr(0, 2), other + " ") << l.output;
    EXPECT_GT(std::stoull(l.output.substr(2)), first_epoch);
}

TEST_F(ElectionFaultCli, LeaderStopsCmdWhenServerStopsAnswering) {
    auto a = candidate("a");
    ASSERT_TRUE(eventually([&] { return runs().size() == 1; })) << read_file(marks);
    server.pause();
    const auto start = std::chrono::steady_clock::now();
    // No renewal can be confirmed now: CMD must get SIGTERM by the local deadline, which is
    // at most one term (2 s) after the pause; 1 s of slack for a loaded machine.
    ASSERT_TRUE(eventually([&] { return contains(read_file(marks), "term a"); }, 10s))
        << a->output();
    EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
    const auto st = a->wait_for(10s);
    server.resume();
    ASSERT_TRUE(st.has_value()) << a->output();
    EXPECT_EQ(*st, code::lost) << a->output();
}

}  // namespace election_fault_cli_test
