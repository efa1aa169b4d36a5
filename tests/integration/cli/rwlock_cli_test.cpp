// `redcoord rwlock NAME --read|--write -- CMD`: readers share, a writer runs alone, the
// environment CMD sees, --wait, and usage errors.
#include "cli_harness.hpp"

using namespace cli_test;

namespace {

struct RwlockCli : ::testing::Test {
    redcoord::testing::local_server server;
    temp_dir dir;
    std::string url = server.url();

    std::unique_ptr<cli_process> start(const std::string& mode, const std::string& body,
                                       const std::string& out) {
        return std::make_unique<cli_process>(
            std::vector<std::string>{"--redis", url, "rwlock", "doc", mode, "--ttl", "5s", "--",
                                     "sh", "-c", body},
            dir.file(out));
    }
};

}  // namespace

TEST_F(RwlockCli, ReadersShareAndAWriterWaitsForThem) {
    const std::string flag = dir.file("reading"), done = dir.file("done");
    // The reader holds until the test says it is done, however slow the machine.
    auto reader = start(
        "--read", "touch " + flag + "; while [ ! -e " + done + " ]; do sleep 0.05; done", "reader");
    ASSERT_TRUE(eventually([&] { return std::filesystem::exists(flag); }));
    // Another reader gets in while the first holds...
    const auto second = run(dir, {"--redis", url, "rwlock", "doc", "--read", "--", "echo", "in"});
    EXPECT_EQ(second.status, code::ok) << second.output;
    EXPECT_TRUE(contains(second.output, "in")) << second.output;
    // ...a writer does not, and gives up after --wait with 124.
    const auto writer = run(
        dir, {"--redis", url, "rwlock", "doc", "--write", "--wait", "300ms", "--", "echo", "w"});
    EXPECT_EQ(writer.status, code::timed_out) << writer.output;
    EXPECT_FALSE(contains(writer.output, "w\n")) << writer.output;
    std::ofstream(done).put('x');
    const auto st = reader->wait_for(30s);
    ASSERT_TRUE(st.has_value());
    EXPECT_EQ(*st, 0) << reader->output();
}

TEST_F(RwlockCli, AWriterNeverOverlapsAnotherRun) {
    const std::string log = dir.file("log");
    std::vector<std::unique_ptr<cli_process>> runs;
    for (int i = 0; i < 5; ++i) {
        const std::string who = i % 2 == 0 ? "W" : "R";
        const std::string body =
            "echo " + who + "+ >> " + log + "; sleep 0.3; echo " + who + "- >> " + log;
        runs.push_back(start(who == "W" ? "--write" : "--read", body, "run" + std::to_string(i)));
    }
    for (auto& r : runs) {
        const auto st = r->wait_for(60s);
        ASSERT_TRUE(st.has_value());
        EXPECT_EQ(*st, 0) << r->output();
    }
    int readers = 0, writers = 0, seen = 0;
    for (const auto& l : lines_of(read_file(log))) {
        ++seen;
        if (l == "W+") {
            EXPECT_EQ(readers + writers, 0) << read_file(log);
            ++writers;
        } else if (l == "W-") {
            --writers;
        } else if (l == "R+") {
            EXPECT_EQ(writers, 0) << read_file(log);
            ++readers;
        } else {
            --readers;
        }
    }
    EXPECT_EQ(seen, 10) << read_file(log);
}

TEST_F(RwlockCli, CmdSeesItsModeAndFencingToken) {
    const auto r = run(dir, {"--redis", url, "rwlock", "doc", "--write", "--", "sh", "-c",
                             "echo \"$REDCOORD_LOCK $REDCOORD_LOCK_MODE $REDCOORD_FENCING_TOKEN\"; "
                             "exit 3"});
    EXPECT_EQ(r.status, 3) << r.output;  // CMD's status
    EXPECT_TRUE(contains(r.output, "doc write ")) << r.output;
    const auto rd = run(dir, {"--redis", url, "rwlock", "doc", "--read", "--", "sh", "-c",
                              "echo \"mode=$REDCOORD_LOCK_MODE\""});
    EXPECT_TRUE(contains(rd.output, "mode=read")) << rd.output;
}

TEST_F(RwlockCli, ModeNameAndTtlMistakesAreUsageErrors) {
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"rwlock", "x", "--", "true"},
          std::vector<std::string>{"rwlock", "x", "--read", "--write", "--", "true"},
          std::vector<std::string>{"rwlock", "a}b", "--read", "--", "true"},
          std::vector<std::string>{"rwlock", "x", "--read", "--ttl", "50ms", "--", "true"}}) {
        auto full = args;
        full.insert(full.begin(), {"--redis", url});
        const auto r = run(dir, full);
        EXPECT_EQ(r.status, code::usage) << r.output;
    }
}
