// `redcoord inspect`: live primitives run by other redcoord processes, seen by an operator.
#include "cli_harness.hpp"

#include <csignal>

using namespace cli_test;

namespace {

struct InspectCli : ::testing::Test {
    redcoord::testing::local_server server;
    temp_dir dir;
    std::string url = server.url();
    int background = 0;

    result inspect(std::vector<std::string> args, bool json = false) {
        args.insert(args.begin(), "inspect");
        if (json) args.insert(args.begin(), "--json");
        args.insert(args.begin(), {"--redis", url});
        return run(dir, args);
    }
    std::unique_ptr<cli_process> start(std::vector<std::string> args) {
        args.insert(args.begin(), {"--redis", url});
        return std::make_unique<cli_process>(
            std::move(args), dir.file("bg-" + std::to_string(++background) + ".out"));
    }
};

}  // namespace

TEST_F(InspectCli, LockHeldByAnotherProcess) {
    auto holder =
        start({"lock", "job", "--ttl", "10s", "--label", "nightly@box-3", "--", "sleep", "20"});
    ASSERT_TRUE(eventually([&] { return contains(inspect({"lock", "job"}).output, "held by"); }));
    const auto j = inspect({"lock", "job"}, true);
    EXPECT_EQ(j.status, code::ok) << j.output;
    EXPECT_TRUE(contains(j.output, R"("kind":"lock","name":"job","held":true,"holder":")"))
        << j.output;
    EXPECT_TRUE(contains(j.output, R"("fencing_counter":)")) << j.output;
    EXPECT_FALSE(contains(j.output, R"("fencing_counter":null)")) << j.output;
    // --label names the holder (issue 38's holder labels), in both forms.
    EXPECT_TRUE(contains(j.output, R"("label":"nightly@box-3")")) << j.output;
    const auto t = inspect({"lock", "job"});
    EXPECT_TRUE(contains(t.output, "nightly@box-3")) << t.output;
    EXPECT_TRUE(contains(t.output, "fencing counter")) << t.output;
    EXPECT_TRUE(contains(t.output, "ttl ")) << t.output;
    holder->signal(SIGTERM);
    EXPECT_TRUE(holder->wait_for(10s));
    EXPECT_TRUE(eventually([&] {
        return contains(inspect({"lock", "job"}).output, "'job': free");
    }));
}

TEST_F(InspectCli, RedlockShowsEveryMaster) {
    redcoord::testing::local_server b, c;
    auto holder = std::make_unique<cli_process>(
        std::vector<std::string>{"--redis", url, "--redis", b.url(), "--redis", c.url(), "lock",
                                 "rl", "--", "sleep", "20"},
        dir.file("redlock.out"));
    const std::vector<std::string> args{"--redis", url,       "--redis", b.url(), "--redis",
                                        c.url(),   "inspect", "lock",    "rl"};
    // A free lock also prints "0 of 3 masters hold a key, quorum 2", so the wait is for the
    // holder. A Redlock round decides once a quorum granted the lock, so the third master may
    // hold no key (its reply came late, or not at all); the quorum is what counts.
    ASSERT_TRUE(eventually([&] { return contains(run(dir, args).output, "'rl': held by "); }))
        << run(dir, args).output;
    const auto text = run(dir, args).output;
    EXPECT_TRUE(contains(text, "'rl': held by ")) << text;
    EXPECT_FALSE(contains(text, "1 of 3 masters")) << text;
    std::size_t servers = 0;
    for (const auto& l : lines_of(text)) servers += l.rfind("  server ", 0) == 0;
    EXPECT_EQ(servers, 3u) << text;
    holder->signal(SIGTERM);
    EXPECT_TRUE(holder->wait_for(10s));
}

TEST_F(InspectCli, ElectionLeaderAndEpoch) {
    auto leader =
        start({"elect", "svc", "--identity", "node-a", "--term", "5s", "--", "sleep", "20"});
    ASSERT_TRUE(eventually([&] {
        return contains(inspect({"election", "svc"}).output, "leader node-a");
    }));
    const auto j = inspect({"election", "svc"}, true);
    EXPECT_TRUE(contains(j.output, R"("kind":"election","name":"svc","leader":"node-a","epoch":)"))
        << j.output;
    EXPECT_TRUE(contains(j.output, R"("term_left_ms":)")) << j.output;
    EXPECT_TRUE(contains(j.output, R"("candidates":[{"identity":"node-a","expires_in_ms":)"))
        << j.output;
    EXPECT_TRUE(
        contains(inspect({"election", "svc"}).output, "  candidates        1\n    node-a ("));
    leader->signal(SIGTERM);
    EXPECT_TRUE(leader->wait_for(10s));
    EXPECT_TRUE(eventually([&] {
        return contains(inspect({"election", "svc"}).output, "no leader");
    }));
}

TEST_F(InspectCli, QueueWithAnExpiredConsumer) {
    ASSERT_EQ(run(dir, {"--redis", url, "queue", "push", "jobs", "a", "b", "c"}).status, code::ok);
    // The popping process exits with its delivery in flight; its lease then runs out.
    ASSERT_EQ(run(dir, {"--redis", url, "queue", "pop", "jobs", "--consumer", "w1", "--visibility",
                        "300ms"})
                  .status,
              code::ok);
    ASSERT_TRUE(eventually([&] { return contains(inspect({"queue", "jobs"}).output, "EXPIRED"); }));
    const auto j = inspect({"queue", "jobs"}, true);
    EXPECT_TRUE(contains(
        j.output,
        R"("kind":"queue","name":"jobs","ready":2,"in_flight":1,"dead":0,"expired_consumers":1,"oldest_ready_age_ms":)"))
        << j.output;
    EXPECT_TRUE(
        contains(j.output, R"("id":"w1","in_flight":1,"expired":true,"lease_left_ms":null)"))
        << j.output;
    const auto t = inspect({"queue", "jobs"});
    EXPECT_TRUE(contains(t.output, "2 ready, 1 in flight, 0 dead")) << t.output;
    EXPECT_TRUE(contains(t.output, "1 expired, awaiting recovery")) << t.output;
}

TEST_F(InspectCli, BarrierArrivals) {
    auto member = start({"barrier", "stage", "--parties", "2", "--timeout", "20s"});
    ASSERT_TRUE(eventually([&] {
        return contains(inspect({"barrier", "stage"}).output, "1 of 2 arrived");
    })) << inspect({"barrier", "stage"}).output;
    ASSERT_EQ(
        run(dir, {"--redis", url, "barrier", "stage", "--parties", "2", "--timeout", "10s"}).status,
        code::ok);
    EXPECT_TRUE(member->wait_for(10s));
    const auto j = inspect({"barrier", "stage"}, true);
    EXPECT_TRUE(contains(
        j.output, R"("kind":"barrier","name":"stage","generation":1,"parties":2,"arrived":0)"))
        << j.output;
}

TEST_F(InspectCli, WatchPrintsSnapshotsUntilTerminated) {
    auto w = start({"--json", "inspect", "election", "watched", "--watch", "--interval", "100ms"});
    ASSERT_TRUE(eventually([&] { return lines_of(w->output()).size() >= 3; })) << w->output();
    auto leader = start({"elect", "watched", "--identity", "node-w", "--", "sleep", "20"});
    EXPECT_TRUE(eventually([&] { return contains(w->output(), R"("leader":"node-w")"); }))
        << w->output();
    w->signal(SIGTERM);
    EXPECT_EQ(w->wait_for(10s), std::optional<int>(code::ok));
    for (const auto& l : lines_of(w->output()))
        EXPECT_EQ(l.rfind(R"({"kind":"election")", 0), 0u) << l;
    leader->signal(SIGTERM);
    EXPECT_TRUE(leader->wait_for(10s));
}

TEST_F(InspectCli, UsageAndConnectionErrors) {
    EXPECT_EQ(inspect({"mutex", "x"}).status, code::usage);
    EXPECT_EQ(inspect({"lock"}).status, code::usage);
    EXPECT_EQ(inspect({"lock", "x", "--interval", "0ms"}).status, code::usage);
    EXPECT_EQ(run(dir, {"--redis", "redis://127.0.0.1:1", "inspect", "queue", "q"}).status,
              code::connection);
}
