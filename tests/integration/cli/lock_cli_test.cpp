// `redcoord lock`: mutual exclusion between concurrent runs, CMD's status and environment,
// --wait, Redlock over several masters, SIGTERM to redcoord.
#include "cli_harness.hpp"

#include <signal.h>

using namespace cli_test;

namespace {

struct LockCli : ::testing::Test {
    redcoord::testing::local_server server;
    temp_dir dir;
    std::string url = server.url();
};

}  // namespace

TEST_F(LockCli, ConcurrentRunsNeverOverlap) {
    const std::string log = dir.file("log");
    // Each CMD appends start/end markers around a sleep; with the lock they must alternate.
    const std::string body = "echo start $$ $(date +%s%N) >> " + log +
                             "; sleep 0.2; echo end $$ $(date +%s%N) >> " + log;
    std::vector<std::unique_ptr<cli_process>> runs;
    for (int i = 0; i < 3; ++i)
        runs.push_back(std::make_unique<cli_process>(
            std::vector<std::string>{"--redis", url, "lock", "x", "--ttl", "5s", "--", "sh", "-c",
                                     body},
            dir.file("run" + std::to_string(i))));
    for (auto& r : runs) {
        const auto st = r->wait_for(20s);
        ASSERT_TRUE(st.has_value());
        EXPECT_EQ(*st, 0) << r->output();
    }
    const auto lines = lines_of(read_file(log));
    ASSERT_EQ(lines.size(), 6u) << read_file(log);
    for (std::size_t i = 0; i < lines.size(); i += 2) {
        std::istringstream a(lines[i]), b(lines[i + 1]);
        std::string wa, pa, wb, pb;
        long long ta = 0, tb = 0;
        a >> wa >> pa >> ta;
        b >> wb >> pb >> tb;
        EXPECT_EQ(wa, "start");
        EXPECT_EQ(wb, "end");
        EXPECT_EQ(pa, pb) << "another run started inside this one: " << read_file(log);
        EXPECT_LE(ta, tb);
    }
}

TEST_F(LockCli, ExitsWithCmdStatusAndPassesFencingToken) {
    auto r1 = run(dir, {"--redis", url, "lock", "job", "--", "sh", "-c",
                        "echo token=$REDCOORD_FENCING_TOKEN; exit 7"});
    EXPECT_EQ(r1.status, 7) << r1.output;
    // Tokens are strictly increasing (they start at the server's clock in microseconds).
    const auto token_of = [](const std::string& out) {
        return std::stoull(out.substr(out.find("token=") + 6));
    };
    ASSERT_TRUE(contains(r1.output, "token=")) << r1.output;
    auto r2 = run(dir, {"--redis", url, "lock", "job", "--", "sh", "-c",
                        "echo token=$REDCOORD_FENCING_TOKEN"});
    EXPECT_EQ(r2.status, 0) << r2.output;
    ASSERT_TRUE(contains(r2.output, "token=")) << r2.output;
    EXPECT_GT(token_of(r2.output), token_of(r1.output));
    // Released after CMD: the key is gone.
    EXPECT_TRUE(server.command({"EXISTS", "redcoord:lock:{job}"}).integer() == 0);
    // A CMD killed by a signal: 128 + signal, as shells report it.
    auto r3 = run(dir, {"--redis", url, "lock", "job", "--", "sh", "-c", "kill -9 $$"});
    EXPECT_EQ(r3.status, 128 + SIGKILL) << r3.output;
}

TEST_F(LockCli, JsonEventsOnStderr) {
    auto r = run(dir, {"--redis", url, "--json", "lock", "j", "--", "true"});
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_TRUE(contains(r.output, R"({"event":"acquired","name":"j","fencing_token":)"))
        << r.output;
    EXPECT_TRUE(contains(r.output, R"(,"servers":1})")) << r.output;
    EXPECT_TRUE(contains(r.output, R"({"event":"released","name":"j","status":0,"released":true})"))
        << r.output;
}

TEST_F(LockCli, NotAcquiredWithinWaitExits124) {
    cli_process holder({"--redis", url, "lock", "busy", "--", "sleep", "3"}, dir.file("holder"));
    ASSERT_TRUE(eventually([&] {
        return server.command({"EXISTS", "redcoord:lock:{busy}"}).integer() == 1;
    }));
    auto r = run(dir, {"--redis", url, "lock", "busy", "--wait", "300ms", "--", "echo", "ran"});
    EXPECT_EQ(r.status, code::timed_out) << r.output;
    EXPECT_FALSE(contains(r.output, "ran")) << r.output;
    EXPECT_TRUE(contains(r.output, "not acquired within 300ms")) << r.output;
    // A waiter without --wait gets it once the holder's CMD ends.
    auto w = run(dir, {"--redis", url, "lock", "busy", "--", "echo", "ran"});
    EXPECT_EQ(w.status, 0);
    EXPECT_TRUE(contains(w.output, "ran"));
    EXPECT_EQ(holder.wait_for(10s), std::optional<int>(0));
}

TEST_F(LockCli, SeveralServersUseRedlock) {
    auto masters = redcoord::testing::start_masters(3);
    std::vector<std::string> args;
    for (auto& m : masters) args.insert(args.end(), {"--redis", m->url()});
    args.insert(args.end(), {"--json", "lock", "rl", "--", "sh", "-c", "echo inside"});
    auto r = run(dir, args);
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "inside"));
    EXPECT_TRUE(contains(r.output, R"("servers":3)")) << r.output;
    // One master down: a majority (2 of 3) still grants it.
    masters[0]->kill();
    auto r2 = run(dir, args);
    EXPECT_EQ(r2.status, 0) << r2.output;
    // Two down: no majority is possible: the connection code.
    masters[1]->kill();
    auto r3 = run(dir, args);
    EXPECT_EQ(r3.status, code::connection) << r3.output;
    EXPECT_FALSE(contains(r3.output, "inside"));
}

TEST_F(LockCli, SigtermStopsCmdGroupAndReleases) {
    const std::string f = dir.file("term");
    cli_process p({"--redis", url, "lock", "t", "--grace", "2s", "--", "sh", "-c",
                   "trap 'echo got-term >> " + f + "; exit 0' TERM; echo ready >> " + f +
                       "; while :; do sleep 0.05; done"},
                  dir.file("out"));
    ASSERT_TRUE(eventually([&] { return contains(read_file(f), "ready"); })) << p.output();
    p.signal(SIGTERM);
    const auto st = p.wait_for(10s);
    ASSERT_TRUE(st.has_value());
    EXPECT_EQ(*st, 128 + SIGTERM) << p.output();
    EXPECT_TRUE(contains(read_file(f), "got-term"));
    EXPECT_EQ(server.command({"EXISTS", "redcoord:lock:{t}"}).integer(), 0) << "lock not released";
}

TEST_F(LockCli, CmdThatIgnoresTermIsKilledAfterGrace) {
    const std::string f = dir.file("ready");
    cli_process p({"--redis", url, "lock", "k", "--grace", "300ms", "--", "sh", "-c",
                   "trap '' TERM; echo ready > " + f + "; while :; do sleep 0.05; done"},
                  dir.file("out"));
    ASSERT_TRUE(eventually([&] { return contains(read_file(f), "ready"); }));
    p.signal(SIGINT);
    const auto st = p.wait_for(10s);
    ASSERT_TRUE(st.has_value());
    EXPECT_EQ(*st, 128 + SIGINT) << p.output();
    EXPECT_EQ(server.command({"EXISTS", "redcoord:lock:{k}"}).integer(), 0);
}

TEST_F(LockCli, CommandNotFoundIs127AndReleases) {
    auto r = run(dir, {"--redis", url, "lock", "nf", "--", "/nonexistent/redcoord-test-cmd"});
    EXPECT_EQ(r.status, code::not_found) << r.output;
    EXPECT_TRUE(contains(r.output, "cannot run")) << r.output;
    EXPECT_EQ(server.command({"EXISTS", "redcoord:lock:{nf}"}).integer(), 0);
}

TEST_F(LockCli, FairRunsGetTheLockInRequestOrder) {
    const std::string log = dir.file("order");
    const std::string queue = "redcoord:lock:{fifo}:queue";
    cli_process holder({"--redis", url, "lock", "fifo", "--fair", "--", "sleep", "1"},
                       dir.file("holder"));
    ASSERT_TRUE(eventually([&] {
        return server.command({"EXISTS", "redcoord:lock:{fifo}"}).integer() == 1;
    }));
    std::vector<std::unique_ptr<cli_process>> runs;
    for (int i = 0; i < 3; ++i) {
        // Each run asks once the one before it is seen in the queue: a known request order.
        runs.push_back(std::make_unique<cli_process>(
            std::vector<std::string>{"--redis", url, "lock", "fifo", "--fair", "--", "sh", "-c",
                                     "echo " + std::to_string(i) + " >> " + log},
            dir.file("run" + std::to_string(i))));
        ASSERT_TRUE(eventually([&] {
            return server.command({"LLEN", queue}).integer() == i + 1;
        })) << runs.back()->output();
    }
    EXPECT_EQ(holder.wait_for(10s), std::optional<int>(0)) << holder.output();
    for (auto& r : runs) EXPECT_EQ(r->wait_for(10s), std::optional<int>(0)) << r->output();
    EXPECT_EQ(lines_of(read_file(log)), (std::vector<std::string>{"0", "1", "2"}));
}

TEST_F(LockCli, FairTimedOutRunLeavesTheQueueAndSigtermStopsAWait) {
    cli_process holder({"--redis", url, "lock", "fq", "--fair", "--", "sleep", "3"},
                       dir.file("holder"));
    ASSERT_TRUE(eventually([&] {
        return server.command({"EXISTS", "redcoord:lock:{fq}"}).integer() == 1;
    }));
    auto r =
        run(dir, {"--redis", url, "lock", "fq", "--fair", "--wait", "300ms", "--", "echo", "ran"});
    EXPECT_EQ(r.status, code::timed_out) << r.output;
    EXPECT_FALSE(contains(r.output, "ran")) << r.output;
    EXPECT_TRUE(contains(r.output, "not acquired within 300ms")) << r.output;
    EXPECT_EQ(server.command({"LLEN", "redcoord:lock:{fq}:queue"}).integer(), 0);
    // A run waiting without --wait stops at SIGTERM at once, out of the queue.
    cli_process waiting({"--redis", url, "lock", "fq", "--fair", "--", "echo", "ran"},
                        dir.file("waiting"));
    ASSERT_TRUE(eventually([&] {
        return server.command({"LLEN", "redcoord:lock:{fq}:queue"}).integer() == 1;
    }));
    const auto t0 = std::chrono::steady_clock::now();
    waiting.signal(SIGTERM);
    EXPECT_EQ(waiting.wait_for(5s), std::optional<int>(128 + SIGTERM)) << waiting.output();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
    EXPECT_EQ(server.command({"LLEN", "redcoord:lock:{fq}:queue"}).integer(), 0);
    EXPECT_EQ(holder.wait_for(10s), std::optional<int>(0));
}

TEST_F(LockCli, FairWithSeveralServersIsAUsageError) {
    auto r = run(dir, {"--redis", url, "--redis", "redis://127.0.0.1:1", "lock", "x", "--fair",
                       "--", "echo", "ran"});
    EXPECT_EQ(r.status, code::usage) << r.output;
    EXPECT_TRUE(contains(r.output, "'lock --fair' takes one server")) << r.output;
    EXPECT_FALSE(contains(r.output, "ran"));
}
