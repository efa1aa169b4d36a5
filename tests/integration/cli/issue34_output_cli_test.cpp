// Issue 34, second half: what the CLI takes in and says back (findings C7, C11-C16, C18, C19 of
// the 2026-11-28 user review). Each case runs the real binary against a real server.
#include "issue34_fixture.hpp"

#include <redcoord/testing/process.hpp>

using namespace cli_test;

namespace {

// The bytes a binary payload test pushes: NULs, a lone 0xff, a newline and a dash.
const std::string binary_payload = std::string("a\0b\xff\n-\0end", 10);

std::string base64(std::string_view in) {
    static constexpr char abc[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    std::size_t i = 0;
    for (; i + 2 < in.size(); i += 3) {
        const auto n = (static_cast<unsigned char>(in[i]) << 16) |
                       (static_cast<unsigned char>(in[i + 1]) << 8) |
                       static_cast<unsigned char>(in[i + 2]);
        for (int s : {18, 12, 6, 0}) out += abc[(n >> s) & 63];
    }
    if (i < in.size()) {
        auto n = static_cast<unsigned>(static_cast<unsigned char>(in[i])) << 16;
        if (i + 1 < in.size()) n |= static_cast<unsigned char>(in[i + 1]) << 8;
        out += abc[(n >> 18) & 63];
        out += abc[(n >> 12) & 63];
        out += i + 1 < in.size() ? abc[(n >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

// A server for one case, and ways to run redcoord against it.
struct served {
    explicit served(const temp_dir& d) : dir(d) {}
    const temp_dir& dir;
    redcoord::testing::local_server server;
    std::string url = server.url();

    result rc(std::vector<std::string> args) {
        args.insert(args.begin(), {"--redis", url});
        return run(dir, std::move(args));
    }
    // `redcoord args... < stdin_file`, through /bin/sh (the harness has no stdin of its own).
    result with_stdin(const std::string& stdin_file, std::vector<std::string> args) {
        static int n = 0;
        const std::string out = dir.file("stdin-run-" + std::to_string(++n) + ".out");
        std::vector<std::string> argv{
            "/bin/sh",         "-c",      "exec \"$0\" \"$@\" < '" + stdin_file + "'",
            REDCOORD_CLI_PATH, "--redis", url};
        argv.insert(argv.end(), args.begin(), args.end());
        redcoord::testing::process_options o;
        o.output_file = out;
        redcoord::testing::process p(std::move(argv), o);
        const auto st = p.wait_for(20s);
        EXPECT_TRUE(st.has_value());
        return {st.value_or(-1), read_file(out)};
    }
    std::string write(const std::string& name, const std::string& bytes) {
        const auto path = dir.file(name);
        std::ofstream(path, std::ios::binary) << bytes;
        return path;
    }
    // The payload of `queue pop NAME --base64` ("DELIVERY BASE64\n").
    std::string pop_base64(const std::string& queue) {
        auto pop = rc({"queue", "pop", queue, "--base64"});
        EXPECT_EQ(pop.status, code::ok) << pop.output;
        const auto sp = pop.output.find(' ');
        if (sp == std::string::npos) return "(none)";
        return pop.output.substr(sp + 1, pop.output.size() - sp - 2);
    }
};

}  // namespace

TEST_F(Cli, C7_QueuePushReadsStdinAndFile) {
    served t(dir);
    const auto file = t.write("payload.bin", binary_payload);
    auto from_file = t.rc({"queue", "push", "q", "--file", file});
    ASSERT_EQ(from_file.status, code::ok) << from_file.output;
    EXPECT_EQ(lines_of(from_file.output).size(), 1u) << from_file.output;
    auto from_stdin = t.with_stdin(file, {"queue", "push", "q", "-"});
    ASSERT_EQ(from_stdin.status, code::ok) << from_stdin.output;
    auto from_b64 = t.rc({"queue", "push", "q", "--base64", base64(binary_payload)});
    ASSERT_EQ(from_b64.status, code::ok) << from_b64.output;
    // Byte-exact, NULs included, and never the literal "-".
    for (int i = 0; i < 3; ++i) EXPECT_EQ(t.pop_base64("q"), base64(binary_payload)) << i;
    auto json = t.rc({"--json", "queue", "pop", "q"});
    EXPECT_EQ(json.status, code::no) << json.output;

    // A text payload read from stdin comes back as it was.
    const auto text = t.write("text.txt", "from stdin\n");
    ASSERT_EQ(t.with_stdin(text, {"queue", "push", "qs", "-"}).status, code::ok);
    auto pop = t.rc({"--json", "queue", "pop", "qs"});
    EXPECT_TRUE(contains(pop.output, R"("payload":"from stdin\n")")) << pop.output;

    auto missing = t.rc({"queue", "push", "q", "--file", dir.file("nope")});
    EXPECT_EQ(missing.status, code::usage) << missing.output;
    EXPECT_TRUE(contains(missing.output, "--file")) << missing.output;
    EXPECT_TRUE(contains(missing.output, "No such file")) << missing.output;
    auto bad = t.rc({"queue", "push", "q", "--base64", "not*base64"});
    EXPECT_EQ(bad.status, code::usage) << bad.output;
    EXPECT_TRUE(contains(bad.output, "--base64")) << bad.output;
    auto both = t.with_stdin(text, {"queue", "push", "q", "-", "--file", file});
    EXPECT_EQ(both.status, code::usage) << both.output;
    auto twice = t.with_stdin(text, {"queue", "push", "q", "-", "-"});
    EXPECT_EQ(twice.status, code::usage) << twice.output;
    auto none = t.rc({"queue", "push", "q"});
    EXPECT_EQ(none.status, code::usage) << none.output;
    // The refused pushes added nothing.
    EXPECT_EQ(t.rc({"queue", "stats", "q"}).output.rfind("ready 0\n", 0), 0u);
}

TEST_F(Cli, C7_JobsAddReadsStdinAndFile) {
    served t(dir);
    const auto file = t.write("payload.bin", binary_payload);
    std::vector<std::string> ids;
    for (const auto& r : {t.rc({"jobs", "add", "js", "--file", file}),
                          t.with_stdin(file, {"jobs", "add", "js", "-"}),
                          t.rc({"jobs", "add", "js", "--base64", base64(binary_payload)})}) {
        EXPECT_EQ(r.status, code::ok) << r.output;
        ids.push_back(r.output.substr(0, r.output.find('\n')));
    }
    for (const auto& id : ids) {
        auto get = t.rc({"jobs", "get", "js", id, "--base64"});
        EXPECT_EQ(get.status, code::ok) << get.output;
        EXPECT_TRUE(contains(get.output, "\npayload " + base64(binary_payload) + "\n"))
            << get.output;
    }
    const auto text = t.write("text.txt", "to bob");
    auto add = t.with_stdin(text, {"jobs", "add", "js", "-"});
    ASSERT_EQ(add.status, code::ok) << add.output;
    auto get = t.rc({"jobs", "get", "js", add.output.substr(0, add.output.find('\n'))});
    EXPECT_TRUE(contains(get.output, "\npayload to bob\n")) << get.output;
    auto missing = t.rc({"jobs", "add", "js", "--file", dir.file("nope")});
    EXPECT_EQ(missing.status, code::usage) << missing.output;
    EXPECT_TRUE(contains(missing.output, "--file")) << missing.output;
}

TEST_F(Cli, C11_BarrierResetIsRefusedWhileInsideUnlessForced) {
    served t(dir);
    auto stuck = t.rc({"barrier", "b1", "--parties", "2", "--timeout", "300ms"});
    EXPECT_EQ(stuck.status, code::timed_out) << stuck.output;
    auto mismatch = t.rc({"barrier", "b1", "--parties", "1", "--timeout", "5s"});
    EXPECT_EQ(mismatch.status, code::usage) << mismatch.output;
    EXPECT_TRUE(contains(mismatch.output, "--reset")) << mismatch.output;
    auto reset = t.rc({"barrier", "b1", "--reset"});
    EXPECT_EQ(reset.status, code::ok) << reset.output;
    EXPECT_TRUE(contains(reset.output, "barrier 'b1' reset")) << reset.output;
    auto now_one = t.rc({"barrier", "b1", "--parties", "1", "--timeout", "5s"});
    EXPECT_EQ(now_one.status, code::ok) << now_one.output;
    EXPECT_EQ(now_one.output, "0\n");

    // A party inside: refused (exit 1, saying so), then forced; the waiter learns it.
    cli_process waiter({"--redis", t.url, "barrier", "b2", "--parties", "3"}, dir.file("waiter"));
    ASSERT_TRUE(eventually([&] {
        return contains(t.rc({"inspect", "barrier", "b2"}).output, "1 of 3 arrived");
    })) << t.rc({"inspect", "barrier", "b2"}).output;
    auto refused = t.rc({"barrier", "b2", "--reset"});
    EXPECT_EQ(refused.status, code::no) << refused.output;
    EXPECT_TRUE(contains(refused.output, "1 party is waiting")) << refused.output;
    EXPECT_TRUE(contains(refused.output, "--force")) << refused.output;
    auto json = t.rc({"--json", "barrier", "b2", "--reset"});
    EXPECT_TRUE(contains(json.output, R"({"name":"b2","reset":false,"waiting":1})")) << json.output;
    EXPECT_TRUE(waiter.running());
    auto forced = t.rc({"barrier", "b2", "--reset", "--force"});
    EXPECT_EQ(forced.status, code::ok) << forced.output;
    EXPECT_TRUE(contains(forced.output, "dropped 1 waiting")) << forced.output;
    EXPECT_EQ(waiter.wait_for(10s), std::optional<int>(code::lost)) << waiter.output();
    EXPECT_TRUE(contains(waiter.output(), "barrier 'b2' was reset")) << waiter.output();
    auto fresh = t.rc({"barrier", "b2", "--parties", "1", "--timeout", "5s"});
    EXPECT_EQ(fresh.status, code::ok) << fresh.output;

    auto force_alone = t.rc({"barrier", "b3", "--parties", "2", "--force"});
    EXPECT_EQ(force_alone.status, code::usage) << force_alone.output;
    auto no_parties = t.rc({"barrier", "b3"});
    EXPECT_EQ(no_parties.status, code::usage) << no_parties.output;
    EXPECT_TRUE(contains(no_parties.output, "--parties")) << no_parties.output;
}

TEST_F(Cli, C12_ATtlTooShortToExtendIsRefusedWithTheMinimum) {
    served t(dir);
    for (const auto& [args, option] : std::vector<std::pair<std::vector<std::string>, std::string>>{
             {{"lock", "x", "--ttl", "100ms", "--", "true"}, "--ttl"},
             {{"lock", "x", "--fair", "--ttl", "150ms", "--", "true"}, "--ttl"},
             {{"elect", "e", "--term", "199ms", "--", "true"}, "--term"}}) {
        auto r = t.rc(args);
        EXPECT_EQ(r.status, code::usage) << r.output;
        EXPECT_TRUE(contains(r.output, option + " must be at least 200ms")) << r.output;
        EXPECT_FALSE(contains(r.output, "ran")) << r.output;
    }
    EXPECT_EQ(t.rc({"lock", "x", "--ttl", "200ms", "--", "true"}).status, code::ok);
    EXPECT_EQ(t.rc({"elect", "e", "--term", "200ms", "--", "true"}).status, code::ok);
}

TEST_F(Cli, C13_TextModeSaysWhatHappened) {
    served t(dir);
    auto empty = t.rc({"queue", "pop", "q1"});
    EXPECT_EQ(empty.status, code::no);
    EXPECT_EQ(empty.output, "redcoord: queue 'q1' is empty\n");
    auto waited = t.rc({"queue", "pop", "q1", "--timeout", "200ms"});
    EXPECT_EQ(waited.status, code::timed_out);
    EXPECT_EQ(waited.output, "redcoord: no message in queue 'q1' within 200ms\n");

    auto add = t.rc({"jobs", "add", "mail", "to bob"});
    const auto id = add.output.substr(0, add.output.find('\n'));
    EXPECT_EQ(t.rc({"jobs", "cancel", "mail", id}).output, "was waiting\n");  // now failed
    auto retry = t.rc({"jobs", "retry", "mail", id});
    EXPECT_EQ(retry.status, code::ok) << retry.output;
    EXPECT_EQ(retry.output, "retried\n");

    auto sig = t.rc({"signal", "chan", "hello"});
    EXPECT_EQ(sig.status, code::ok) << sig.output;
    EXPECT_TRUE(contains(sig.output, "0\n")) << sig.output;  // stdout, for scripts
    EXPECT_TRUE(contains(sig.output, "redcoord: no receiver on 'chan'")) << sig.output;
}

TEST_F(Cli, C14_JobsGetShowsTheIdAndItsTimes) {
    served t(dir);
    auto add = t.rc({"jobs", "add", "mail", "to bob", "--delay", "10m"});
    ASSERT_EQ(add.status, code::ok) << add.output;
    const auto id = add.output.substr(0, add.output.find('\n'));
    auto get = t.rc({"jobs", "get", "mail", id});
    ASSERT_EQ(get.status, code::ok) << get.output;
    const auto lines = lines_of(get.output);
    ASSERT_GE(lines.size(), 4u) << get.output;
    EXPECT_EQ(lines[0], "id " + id);
    EXPECT_TRUE(contains(get.output, "\nstate delayed\n")) << get.output;
    // ISO 8601 UTC, with the time left until the due time.
    EXPECT_TRUE(contains(get.output, "\nadded 20")) << get.output;
    EXPECT_TRUE(contains(get.output, "\ndue 20")) << get.output;
    EXPECT_TRUE(contains(get.output, "Z (in 9m5")) << get.output;
    EXPECT_FALSE(contains(get.output, "\nstarted ")) << get.output;
    auto json = t.rc({"--json", "jobs", "get", "mail", id});
    EXPECT_TRUE(contains(json.output, "\"added_at_ms\":")) << json.output;
    EXPECT_TRUE(contains(json.output, "\"due_at_ms\":")) << json.output;
    EXPECT_TRUE(contains(json.output, "\"started_at_ms\":null")) << json.output;
    EXPECT_TRUE(contains(json.output, "\"finished_at_ms\":null")) << json.output;
}

TEST_F(Cli, C15_AnAnonymousPopLeavesNoConsumerBehind) {
    served t(dir);
    auto empty = t.rc({"queue", "pop", "q1"});
    EXPECT_EQ(empty.status, code::no) << empty.output;
    EXPECT_EQ(t.rc({"queue", "stats", "q1"}).output, "ready 0\nin_flight 0\ndead 0\n");

    ASSERT_EQ(t.rc({"queue", "push", "q1", "a", "b"}).status, code::ok);
    auto named = t.rc({"queue", "pop", "q1", "--consumer", "host-a"});
    ASSERT_EQ(named.status, code::ok) << named.output;
    auto anon = t.rc({"queue", "pop", "q1"});
    ASSERT_EQ(anon.status, code::ok) << anon.output;
    const auto delivery = anon.output.substr(0, anon.output.find(' '));
    const auto consumer = delivery.substr(0, delivery.find('/'));
    EXPECT_TRUE(contains(t.rc({"queue", "stats", "q1"}).output, "consumer " + consumer + " 1\n"));
    auto ack = t.rc({"queue", "ack", "q1", delivery});
    EXPECT_EQ(ack.status, code::ok) << ack.output;
    // The anonymous consumer is retired with its last delivery; a named one stays.
    EXPECT_EQ(t.rc({"queue", "stats", "q1"}).output,
              "ready 0\nin_flight 1\ndead 0\nconsumer host-a 1\n");
    auto named_ack = t.rc({"queue", "ack", "q1", named.output.substr(0, named.output.find(' '))});
    EXPECT_EQ(named_ack.status, code::ok) << named_ack.output;
    EXPECT_TRUE(contains(t.rc({"queue", "stats", "q1"}).output, "consumer host-a 0\n"));
}

TEST_F(Cli, C16_DefaultsAndFootersAreTheSameAcrossSubcommands) {
    served t(dir);
    auto pop = run(dir, {"queue", "pop", "--help"});
    auto add = run(dir, {"jobs", "add", "--help"});
    auto nack = run(dir, {"queue", "nack", "--help"});
    auto recover = run(dir, {"queue", "recover", "--help"});
    for (const auto* h : {&pop, &add, &nack, &recover}) {
        EXPECT_TRUE(contains(h->output, "--max-attempts UINT=5 ")) << h->output;
        EXPECT_FALSE(contains(h->output, "--max-attempts UINT=3 ")) << h->output;
    }
    auto dead = run(dir, {"queue", "dead", "--help"});
    auto list = run(dir, {"jobs", "list", "--help"});
    for (const auto* h : {&dead, &list})
        EXPECT_TRUE(contains(h->output, "--limit UINT=100 ")) << h->output;
    // The listing default caps what is shown; --limit 0 shows all.
    for (int i = 0; i < 3; ++i) (void)t.rc({"queue", "push", "d", std::to_string(i)});
    for (int i = 0; i < 3; ++i) {
        auto p = t.rc({"queue", "pop", "d"});
        (void)t.rc({"queue", "nack", "d", p.output.substr(0, p.output.find(' ')), "--dead"});
    }
    EXPECT_EQ(lines_of(t.rc({"queue", "dead", "d", "--limit", "2"}).output).size(), 2u);
    EXPECT_EQ(lines_of(t.rc({"queue", "dead", "d"}).output).size(), 3u);

    // Every group's help ends with the same footer, and none repeats the exit table.
    auto queue = run(dir, {"queue", "--help"});
    auto jobs = run(dir, {"jobs", "--help"});
    auto inspect = run(dir, {"inspect", "--help"});
    const auto tail = [](const std::string& s) { return s.substr(s.rfind("Global options")); };
    ASSERT_TRUE(contains(queue.output, "Global options")) << queue.output;
    ASSERT_TRUE(contains(jobs.output, "Global options")) << jobs.output;
    ASSERT_TRUE(contains(inspect.output, "Global options")) << inspect.output;
    EXPECT_EQ(tail(queue.output), tail(jobs.output));
    EXPECT_EQ(tail(queue.output), tail(inspect.output));
    for (const auto* h : {&queue, &jobs, &inspect})
        EXPECT_FALSE(contains(h->output, "Exit status:")) << h->output;
}

TEST_F(Cli, C18_HelpListsTlsUrlsAndTheGlobalOptionsEverywhere) {
    auto top = run(dir, {"--help"});
    EXPECT_TRUE(contains(top.output, "rediss://")) << top.output;
    EXPECT_TRUE(contains(top.output, "rediss-cluster://")) << top.output;
    EXPECT_TRUE(contains(top.output.substr(0, top.output.find('\n')), "jobs")) << top.output;
    const std::vector<std::vector<std::string>> pages{
        {"lock"},          {"elect"},          {"leader"},        {"observe"},
        {"acl-rules"},     {"signal"},         {"wait"},          {"barrier"},
        {"queue"},         {"queue", "push"},  {"queue", "pop"},  {"queue", "ack"},
        {"queue", "nack"}, {"queue", "stats"}, {"queue", "dead"}, {"queue", "recover"},
        {"jobs"},          {"jobs", "add"},    {"jobs", "get"},   {"jobs", "list"},
        {"inspect"},       {"inspect", "lock"}};
    for (auto page : pages) {
        page.push_back("--help");
        auto h = run(dir, page);
        EXPECT_EQ(h.status, code::ok) << page[0];
        for (const char* opt : {"--redis URL", "--json", "--prefix"})
            EXPECT_TRUE(contains(h.output, opt)) << page[0] << " " << page[1] << ": " << h.output;
    }
}
