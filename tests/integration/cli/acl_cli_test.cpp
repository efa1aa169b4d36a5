// `redcoord acl-rules` (issue 18): its line, pasted into redis-cli on a real server, creates a
// user with which every CLI command works, with the default and a custom prefix; a user made
// for another part gets exit 122 naming the refused command, never a wait.
#include "cli_harness.hpp"

#include <redcoord/core/connection.hpp>
#include <redcoord/testing/process.hpp>

using namespace cli_test;

namespace {

struct AclCli : ::testing::Test {
    redcoord::testing::local_server redis;
    temp_dir dir;

    // Runs `redcoord acl-rules args...`, pipes its output into redis-cli connected as the
    // default user (exactly what an administrator would paste), then sets a password.
    // Returns the URL that logs in as `user`.
    std::string create_user(const std::string& user, std::vector<std::string> args) {
        args.insert(args.begin(), "acl-rules");
        args.insert(args.end(), {"--user", user});
        auto rules = run(dir, args);
        EXPECT_EQ(rules.status, 0) << rules.output;
        EXPECT_EQ(lines_of(rules.output).size(), 1u) << rules.output;
        const std::string file = dir.file(user + ".acl");
        { std::ofstream(file) << rules.output; }
        const std::string out = dir.file(user + ".redis-cli");
        redcoord::testing::process_options o;
        o.output_file = out;
        const auto admin = redis.endpoint();  // TLS when the run asks for it (REDCOORD_TEST_TLS=1)
        std::string tls;
        if (admin.tls.enabled) tls = " --tls --cacert '" + admin.tls.ca_file + "'";
        redcoord::testing::process cli(
            {"/bin/sh", "-c",
             "redis-cli -p " + std::to_string(redis.port()) + tls + " < '" + file + "'"},
            o);
        EXPECT_EQ(cli.wait_for(10s), std::optional<int>(0));
        EXPECT_EQ(read_file(out), "OK\n") << "redis-cli did not accept: " << rules.output;
        (void)redis.command({"ACL", "SETUSER", user, ">cli-pass"});
        // The server's own URL (its TLS options included), logging in as `user`.
        auto ep = redis.endpoint();
        ep.user = user;
        ep.password.clear();
        std::string url = ep.to_string();
        url.insert(url.find(user + "@") + user.size(), ":cli-pass");
        return url;
    }

    result as(const std::string& url, std::vector<std::string> args,
              std::chrono::milliseconds limit = 20s) {
        args.insert(args.begin(), {"--redis", url});
        return run(dir, args, {}, limit);
    }
};

}  // namespace

TEST_F(AclCli, PrintsOneSetuserLineForEachPart) {
    auto all = run(dir, {"acl-rules"});
    ASSERT_EQ(all.status, 0);
    EXPECT_EQ(all.output.rfind("ACL SETUSER redcoord on resetkeys resetchannels -@all +", 0), 0u)
        << all.output;
    for (const char* part : {"lock", "election", "signaling", "queue", "limit"}) {
        auto one = run(dir, {"acl-rules", "--part", part, "--prefix", "app1:"});
        ASSERT_EQ(one.status, 0) << one.output;
        EXPECT_TRUE(contains(one.output, " ~app1:")) << one.output;
        EXPECT_FALSE(contains(one.output, "redcoord:")) << one.output;
    }
    auto q = run(dir, {"acl-rules", "--part", "queue"});
    EXPECT_TRUE(contains(q.output, "+blmove")) << q.output;
    // Its only channels are its own (async_pop's push notices).
    EXPECT_TRUE(contains(q.output, " &redcoord:queue:*")) << q.output;
    EXPECT_EQ(q.output.find('&'), q.output.rfind('&')) << q.output;
    auto sig = run(
        dir, {"--json", "acl-rules", "--part", "signaling", "--channel", "orders*", "--db", "3"});
    EXPECT_TRUE(contains(sig.output, "\"channels\":[")) << sig.output;
    EXPECT_TRUE(contains(sig.output, "\"orders*\"")) << sig.output;
    EXPECT_TRUE(contains(sig.output, "\"select\"")) << sig.output;
    auto cluster = run(dir, {"acl-rules", "--part", "signaling", "--cluster"});
    EXPECT_TRUE(contains(cluster.output, "+cluster|shards +cluster|slots +asking"))
        << cluster.output;
    EXPECT_TRUE(contains(cluster.output, "+ssubscribe +sunsubscribe +spublish")) << cluster.output;
    EXPECT_FALSE(contains(run(dir, {"acl-rules", "--part", "signaling"}).output, "spublish"));
    EXPECT_EQ(run(dir, {"acl-rules", "--part", "locks"}).status, code::usage);
    EXPECT_EQ(run(dir, {"acl-rules", "--prefix", "has space:"}).status, code::usage);
    auto help = run(dir, {"--help"});
    EXPECT_TRUE(contains(help.output, "acl-rules")) << help.output;
}

TEST_F(AclCli, EveryCommandWorksAsTheUserItCreates) {
    for (const std::string prefix : {std::string("redcoord:"), std::string("app1:")}) {
        SCOPED_TRACE(prefix);
        const std::string user = prefix == "redcoord:" ? "cli_default" : "cli_custom";
        const auto url = create_user(user, {"--prefix", prefix, "--channel", "news*"});
        auto g = [&](std::vector<std::string> args, std::chrono::milliseconds limit = 20s) {
            args.insert(args.begin(), {"--prefix", prefix});
            return as(url, args, limit);
        };
        auto lock = g({"lock", "res", "--", "true"});
        EXPECT_EQ(lock.status, code::ok) << lock.output;
        auto elect = g({"elect", "job", "--term", "2s", "--", "true"});
        EXPECT_EQ(elect.status, code::ok) << elect.output;
        auto leader = g({"leader", "job"});
        EXPECT_EQ(leader.status, code::no) << leader.output;  // resigned when CMD exited
        auto sig = g({"signal", "news.1", "hello"});
        EXPECT_EQ(sig.status, code::ok) << sig.output;
        auto bar = g({"barrier", "b", "--parties", "1", "--timeout", "5s"});
        EXPECT_EQ(bar.status, code::ok) << bar.output;
        auto push = g({"queue", "push", "jobs", "one"});
        ASSERT_EQ(push.status, code::ok) << push.output;
        auto pop = g({"queue", "pop", "jobs", "--consumer", "w1"});
        ASSERT_EQ(pop.status, code::ok) << pop.output;
        auto ack = g({"queue", "ack", "jobs", pop.output.substr(0, pop.output.find(' '))});
        EXPECT_EQ(ack.status, code::ok) << ack.output;
        auto stats = g({"queue", "stats", "jobs"});
        EXPECT_EQ(stats.status, code::ok) << stats.output;
    }
}

TEST_F(AclCli, UserOfAnotherPartGetsExit122NamingTheCommand) {
    const auto queue_user = create_user("cli_queue_only", {"--part", "queue"});
    const auto lock_user = create_user("cli_lock_only", {"--part", "lock"});
    auto push = as(lock_user, {"queue", "push", "jobs", "x"});
    EXPECT_EQ(push.status, code::server) << push.output;
    EXPECT_TRUE(contains(push.output, "permission denied")) << push.output;
    EXPECT_TRUE(contains(push.output, "'lpush'")) << push.output;
    // elect campaigns on the runtime's threads; a refused round must end it, not wait forever.
    const auto t0 = std::chrono::steady_clock::now();
    auto elect = as(queue_user, {"elect", "job", "--", "true"}, 10s);
    EXPECT_EQ(elect.status, code::server) << elect.output;
    EXPECT_TRUE(contains(elect.output, "permission denied")) << elect.output;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
    auto wait = as(queue_user, {"wait", "news", "--timeout", "10s"}, 10s);
    EXPECT_EQ(wait.status, code::server) << wait.output;
    EXPECT_TRUE(contains(wait.output, "'subscribe'")) << wait.output;
}

TEST_F(AclCli, C19_InspectUserReadsEveryPartAndWritesNothing) {
    // Something to look at, made by the default user.
    const std::string admin = redis.url();
    ASSERT_EQ(run(dir, {"--redis", admin, "queue", "push", "jobs", "one"}).status, code::ok);
    ASSERT_EQ(run(dir, {"--redis", admin, "jobs", "add", "mail", "x"}).status, code::ok);
    auto rules = run(dir, {"acl-rules", "--inspect"});
    EXPECT_TRUE(contains(rules.output, "-@all")) << rules.output;
    for (const char* write : {"+set ", "+del ", "+lpush", "+zadd", "+hset", "+publish"})
        EXPECT_FALSE(contains(rules.output, write)) << write << ": " << rules.output;
    const auto url = create_user("cli_inspect", {"--inspect"});
    for (const char* kind :
         {"lock", "election", "queue", "barrier", "jobs", "semaphore", "rwlock"}) {
        auto r = as(url, {"inspect", kind, kind == std::string("queue") ? "jobs" : "mail"});
        EXPECT_EQ(r.status, code::ok) << kind << ": " << r.output;
    }
    auto limit = as(url, {"inspect", "limit", "mail", "--rate", "5/s"});
    EXPECT_EQ(limit.status, code::ok) << limit.output;
    auto push = as(url, {"queue", "push", "jobs", "x"});
    EXPECT_EQ(push.status, code::server) << push.output;
    EXPECT_TRUE(contains(push.output, "permission denied")) << push.output;
    // --inspect is a profile of its own: --part does not widen it.
    EXPECT_EQ(run(dir, {"acl-rules", "--inspect", "--part", "lock"}).status, code::usage);
}
