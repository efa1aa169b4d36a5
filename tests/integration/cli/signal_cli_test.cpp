// `redcoord signal`, `wait`, `barrier`.
#include "cli_harness.hpp"

using namespace cli_test;

namespace {

struct SignalCli : ::testing::Test {
    redcoord::testing::local_server server;
    temp_dir dir;
    std::string url = server.url();

    // Pub/sub is fire-and-forget: signal until a receiver got it (broadcast reports receivers
    // on stdout's first line; a note on stderr follows when there were none).
    void signal_until_received(const std::string& channel, const std::string& payload) {
        ASSERT_TRUE(eventually([&] {
            auto r = run(dir, {"--redis", url, "signal", channel, payload});
            return r.status == 0 && r.output.rfind("0\n", 0) != 0;
        })) << "no waiter ever received "
            << channel;
    }
};

}  // namespace

TEST_F(SignalCli, WaitPrintsPayload) {
    cli_process w({"--redis", url, "wait", "ch", "--timeout", "15s"}, dir.file("w"));
    signal_until_received("ch", "hello world");
    ASSERT_EQ(w.wait_for(10s), std::optional<int>(0));
    EXPECT_EQ(w.output(), "hello world\n");
}

TEST_F(SignalCli, WaitAnyAndAllWithJson) {
    cli_process any({"--redis", url, "--json", "wait", "a", "b", "--any", "--timeout", "15s"},
                    dir.file("any"));
    signal_until_received("b", "pb");
    ASSERT_EQ(any.wait_for(10s), std::optional<int>(0));
    EXPECT_EQ(any.output(), "{\"channel\":\"b\",\"payload\":\"pb\"}\n");

    cli_process all({"--redis", url, "wait", "c1", "c2", "--all", "--timeout", "15s"},
                    dir.file("all"));
    signal_until_received("c2", "two");
    EXPECT_FALSE(all.wait_for(200ms).has_value()) << "returned before every channel had a signal";
    signal_until_received("c1", "one");
    ASSERT_EQ(all.wait_for(10s), std::optional<int>(0));
    EXPECT_EQ(all.output(), "c1 one\nc2 two\n");
}

TEST_F(SignalCli, UnicastReachesOneWaiter) {
    auto none = run(dir, {"--redis", url, "--json", "signal", "u", "x", "--unicast"});
    EXPECT_EQ(none.status, code::no);
    EXPECT_EQ(none.output, "{\"channel\":\"u\",\"delivered\":false}\n");
    cli_process w1({"--redis", url, "wait", "u", "--unicast", "--timeout", "15s"}, dir.file("w1"));
    cli_process w2({"--redis", url, "wait", "u", "--unicast", "--timeout", "15s"}, dir.file("w2"));
    ASSERT_TRUE(eventually([&] {
        return run(dir, {"--redis", url, "signal", "u", "job", "--unicast"}).status == 0;
    }));
    // Exactly one waiter got it; the other still waits.
    ASSERT_TRUE(eventually([&] { return !w1.running() || !w2.running(); }));
    std::this_thread::sleep_for(300ms);
    EXPECT_NE(w1.running(), w2.running());
    auto& done = w1.running() ? w2 : w1;
    EXPECT_EQ(done.output(), "job\n");
}

TEST_F(SignalCli, WaitTimesOutWith124) {
    auto r = run(dir, {"--redis", url, "wait", "quiet", "--timeout", "200ms"});
    EXPECT_EQ(r.status, code::timed_out);
    auto j = run(dir, {"--redis", url, "--json", "wait", "quiet", "--timeout", "200ms"});
    EXPECT_EQ(j.status, code::timed_out);
    EXPECT_TRUE(contains(j.output, "{\"timed_out\":true}\n")) << j.output;
}

TEST_F(SignalCli, BarrierReleasesAllParties) {
    std::vector<std::unique_ptr<cli_process>> ps;
    for (int i = 0; i < 3; ++i)
        ps.push_back(std::make_unique<cli_process>(
            std::vector<std::string>{"--redis", url, "--json", "barrier", "b", "--parties", "3",
                                     "--timeout", "15s"},
            dir.file("b" + std::to_string(i))));
    for (auto& p : ps) {
        ASSERT_EQ(p->wait_for(20s), std::optional<int>(0)) << p->output();
        EXPECT_EQ(p->output(), "{\"name\":\"b\",\"generation\":0}\n");
    }
}

TEST_F(SignalCli, BarrierTimesOutWith124) {
    auto r = run(dir, {"--redis", url, "--json", "barrier", "lonely", "--parties", "2", "--timeout",
                       "300ms"});
    EXPECT_EQ(r.status, code::timed_out) << r.output;
    EXPECT_TRUE(contains(r.output, R"({"name":"lonely","timed_out":true,"arrived":1,"parties":2})"))
        << r.output;
}
