// `redcoord lock` under real faults: the master SIGKILLed, the key deleted behind its back,
// redcoord itself SIGKILLed. In each case CMD must be stopped, not left running unprotected.
#include "cli_harness.hpp"

#include <signal.h>

using namespace cli_test;

namespace {

struct LockFaultCli : ::testing::Test {
    redcoord::testing::local_server server;
    temp_dir dir;
    std::string url = server.url();
    std::string marks = dir.file("marks");

    // CMD: records its pid, then loops until SIGTERM, which it records.
    std::vector<std::string> trapping_cmd() const {
        return {"sh", "-c",
                "trap 'echo got-term >> " + marks + "; exit 0' TERM; echo pid $$ >> " + marks +
                    "; while :; do sleep 0.05; done"};
    }
    std::vector<std::string> lock_args(const std::string& name,
                                       std::vector<std::string> extra = {}) const {
        std::vector<std::string> a{"--redis", url, "lock", name, "--ttl", "1s", "--grace", "2s"};
        a.insert(a.end(), extra.begin(), extra.end());
        a.push_back("--");
        for (auto& s : trapping_cmd()) a.push_back(s);
        return a;
    }
    bool cmd_started() const { return contains(read_file(marks), "pid "); }
    pid_t cmd_pid() const {
        std::istringstream in(read_file(marks));
        std::string w;
        pid_t p = -1;
        in >> w >> p;
        return p;
    }
};

bool pid_gone(pid_t p) { return ::kill(p, 0) != 0 && errno == ESRCH; }

}  // namespace

TEST_F(LockFaultCli, KilledMasterStopsCmd) {
    cli_process p(lock_args("m"), dir.file("out"));
    ASSERT_TRUE(eventually([&] { return cmd_started(); })) << p.output();
    server.kill();
    // The watchdog cannot extend; before the 1 s validity ends CMD gets SIGTERM.
    const auto st = p.wait_for(10s);
    ASSERT_TRUE(st.has_value()) << p.output();
    EXPECT_EQ(*st, code::lost) << p.output();
    EXPECT_TRUE(contains(read_file(marks), "got-term")) << read_file(marks);
    EXPECT_TRUE(contains(p.output(), "lock 'm' lost")) << p.output();
}

TEST_F(LockFaultCli, DeletedKeyStopsCmd) {
    cli_process p(lock_args("d"), dir.file("out"));
    ASSERT_TRUE(eventually([&] { return cmd_started(); })) << p.output();
    // Someone else takes the resource: the next extension finds another token.
    server.command({"SET", "redcoord:lock:{d}", "someone-else", "PX", "60000"});
    const auto st = p.wait_for(10s);
    ASSERT_TRUE(st.has_value()) << p.output();
    EXPECT_EQ(*st, code::lost) << p.output();
    EXPECT_TRUE(contains(read_file(marks), "got-term"));
    // The other holder's key was not touched by the release.
    EXPECT_EQ(server.command({"GET", "redcoord:lock:{d}"}).text(), "someone-else");
}

TEST_F(LockFaultCli, PausedMasterStopsCmdBeforeValidityEnds) {
    cli_process p(lock_args("s"), dir.file("out"));
    ASSERT_TRUE(eventually([&] { return cmd_started(); })) << p.output();
    server.pause();
    const auto st = p.wait_for(10s);
    server.resume();
    ASSERT_TRUE(st.has_value()) << p.output();
    EXPECT_EQ(*st, code::lost) << p.output();
    EXPECT_TRUE(contains(read_file(marks), "got-term"));
}

TEST_F(LockFaultCli, KilledRedcoordTerminatesCmd) {
    cli_process p(lock_args("k"), dir.file("out"));
    ASSERT_TRUE(eventually([&] { return cmd_started(); })) << p.output();
    const pid_t cmd = cmd_pid();
    ASSERT_GT(cmd, 0);
    p.kill();  // SIGKILL: no clean-up code runs; the parent-death signal must stop CMD
    EXPECT_TRUE(eventually([&] { return contains(read_file(marks), "got-term"); }, 5s))
        << read_file(marks);
    EXPECT_TRUE(eventually([&] { return pid_gone(cmd); }, 5s));
    // The lock was not released (redcoord died) but expires after its TTL; then it is free.
    auto r = run(dir, {"--redis", url, "lock", "k", "--wait", "5s", "--", "true"});
    EXPECT_EQ(r.status, 0) << r.output;
}
