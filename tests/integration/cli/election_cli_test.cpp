// `redcoord elect`, `leader`, `observe`.
#include "cli_harness.hpp"

using namespace cli_test;

namespace {

struct ElectionCli : ::testing::Test {
    redcoord::testing::local_server server;
    temp_dir dir;
    std::string url = server.url();
};

}  // namespace

TEST_F(ElectionCli, RunsCmdAsLeaderThenResigns) {
    const std::string f = dir.file("f"), stop = dir.file("stop");
    // CMD runs until the test creates `stop`, so the checks below see it leading however slow
    // the machine is.
    cli_process p(
        {"--redis", url, "elect", "svc", "--identity", "node-a", "--term", "1s", "--", "sh", "-c",
         "echo $REDCOORD_IDENTITY $REDCOORD_EPOCH > " + f + "; while [ ! -e " + stop +
             " ]; do sleep 0.02; done"},
        dir.file("out"));
    ASSERT_TRUE(eventually([&] { return contains(read_file(f), "node-a "); })) << p.output();
    // The epoch CMD saw is the one `leader` reports (epochs start at the server's clock in us).
    const std::string epoch = read_file(f).substr(7, read_file(f).find('\n') - 7);
    EXPECT_GT(std::stoull(epoch), 0u);
    auto l = run(dir, {"--redis", url, "leader", "svc"});
    EXPECT_EQ(l.status, 0) << l.output;
    EXPECT_EQ(l.output, "node-a " + epoch + "\n");
    auto j = run(dir, {"--redis", url, "--json", "leader", "svc"});
    EXPECT_TRUE(
        contains(j.output, R"({"name":"svc","leader":"node-a","epoch":)" + epoch + R"(,"ttl_ms":)"))
        << j.output;
    std::ofstream(stop).put('x');
    ASSERT_EQ(p.wait_for(10s), std::optional<int>(0)) << p.output();
    // Resigned when CMD exited: no leader now, well before the term would have run out.
    auto none = run(dir, {"--redis", url, "leader", "svc"});
    EXPECT_EQ(none.status, code::no);
    EXPECT_EQ(none.output, "none\n");
    auto nj = run(dir, {"--redis", url, "--json", "leader", "svc"});
    EXPECT_EQ(nj.output, "{\"name\":\"svc\",\"leader\":null,\"epoch\":null}\n");
}

TEST_F(ElectionCli, ExitStatusIsCmds) {
    auto r = run(dir, {"--redis", url, "elect", "s2", "--term", "1s", "--", "sh", "-c", "exit 3"});
    EXPECT_EQ(r.status, 3) << r.output;
}

TEST_F(ElectionCli, NotElectedWithinWait) {
    cli_process holder(
        {"--redis", url, "elect", "s3", "--identity", "a", "--term", "1s", "--", "sleep", "3"},
        dir.file("holder"));
    ASSERT_TRUE(eventually([&] { return run(dir, {"--redis", url, "leader", "s3"}).status == 0; }));
    auto r = run(dir, {"--redis", url, "elect", "s3", "--identity", "b", "--term", "1s", "--wait",
                       "500ms", "--", "echo", "ran"});
    EXPECT_EQ(r.status, code::timed_out) << r.output;
    EXPECT_FALSE(contains(r.output, "ran"));
    holder.kill();
}

TEST_F(ElectionCli, ObservePrintsChanges) {
    cli_process obs({"--redis", url, "observe", "s4", "--timeout", "3s", "--interval", "20ms"},
                    dir.file("obs"));
    ASSERT_TRUE(eventually([&] { return contains(obs.output(), "none"); }));
    auto r1 = run(dir, {"--redis", url, "elect", "s4", "--identity", "first", "--term", "1s", "--",
                        "sleep", "0.4"});
    EXPECT_EQ(r1.status, 0);
    auto r2 = run(dir, {"--redis", url, "elect", "s4", "--identity", "second", "--term", "1s", "--",
                        "sleep", "0.4"});
    EXPECT_EQ(r2.status, 0);
    ASSERT_EQ(obs.wait_for(10s), std::optional<int>(0));
    const auto lines = lines_of(obs.output());
    // none -> first E1 -> (none) -> second E2 -> none with E2 > E1: each leadership seen, in
    // order. The gap between the two runs may be shorter than a poll, so the middle "none" is
    // optional.
    ASSERT_GE(lines.size(), 4u) << obs.output();
    EXPECT_EQ(lines.front(), "none");
    EXPECT_EQ(lines.back(), "none");
    std::vector<std::string> leaders;
    for (const auto& l : lines)
        if (l != "none") leaders.push_back(l);
    ASSERT_EQ(leaders.size(), 2u) << obs.output();
    EXPECT_EQ(leaders[0].substr(0, 6), "first ") << obs.output();
    EXPECT_EQ(leaders[1].substr(0, 7), "second ") << obs.output();
    EXPECT_GT(std::stoull(leaders[1].substr(7)), std::stoull(leaders[0].substr(6))) << obs.output();
}
