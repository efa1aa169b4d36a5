// `redcoord queue`: push, pop in one process and ack/nack in another, stats, dead letters.
#include "cli_harness.hpp"

using namespace cli_test;

namespace {

struct QueueCli : ::testing::Test {
    redcoord::testing::local_server server;
    temp_dir dir;
    std::string url = server.url();

    result q(std::vector<std::string> args) {
        args.insert(args.begin(), {"--redis", url, "queue"});
        return run(dir, args);
    }
    result qj(std::vector<std::string> args) {
        args.insert(args.begin(), {"--redis", url, "--json", "queue"});
        return run(dir, args);
    }
    // "DELIVERY PAYLOAD\n" -> {DELIVERY, PAYLOAD}
    static std::pair<std::string, std::string> split(const std::string& out) {
        const auto sp = out.find(' ');
        return {out.substr(0, sp), out.substr(sp + 1, out.size() - sp - 2)};
    }
};

}  // namespace

TEST_F(QueueCli, PushPopAckAcrossProcesses) {
    auto push = q({"push", "jobs", "first job", "second"});
    ASSERT_EQ(push.status, 0) << push.output;
    const auto ids = lines_of(push.output);
    ASSERT_EQ(ids.size(), 2u);
    EXPECT_EQ(ids[0].size(), 32u);

    auto pop = q({"pop", "jobs", "--consumer", "worker-1"});
    ASSERT_EQ(pop.status, 0) << pop.output;
    const auto [delivery, payload] = split(pop.output);
    EXPECT_EQ(delivery, "worker-1/" + ids[0]);
    EXPECT_EQ(payload, "first job");

    // The popping process has exited; the delivery stays in flight for a later ack.
    auto stats = qj({"stats", "jobs"});
    EXPECT_TRUE(contains(
        stats.output,
        R"({"name":"jobs","ready":1,"in_flight":1,"dead":0,"consumers":{"worker-1":1},"expired":[]})"))
        << stats.output;
    auto ack = qj({"ack", "jobs", delivery});
    EXPECT_EQ(ack.status, 0) << ack.output;
    EXPECT_EQ(ack.output, "{\"delivery\":\"" + delivery + "\",\"acked\":true}\n");
    auto again = q({"ack", "jobs", delivery});
    EXPECT_EQ(again.status, code::no) << again.output;
    // A bare id with --consumer works too.
    auto pop2 = q({"pop", "jobs", "--consumer", "worker-1"});
    ASSERT_EQ(pop2.status, 0);
    auto ack2 = q({"ack", "jobs", ids[1], "--consumer", "worker-1"});
    EXPECT_EQ(ack2.status, 0) << ack2.output;
    // Empty queue: exit 1 without waiting, 124 after --timeout.
    EXPECT_EQ(q({"pop", "jobs"}).status, code::no);
    EXPECT_EQ(q({"pop", "jobs", "--timeout", "200ms"}).status, code::timed_out);
}

TEST_F(QueueCli, PopJsonShapeAndDefaultConsumer) {
    ASSERT_EQ(q({"push", "jq", "p"}).status, 0);
    auto pop = qj({"pop", "jq"});
    ASSERT_EQ(pop.status, 0) << pop.output;
    EXPECT_TRUE(contains(pop.output, R"({"delivery":"cli-)")) << pop.output;
    EXPECT_TRUE(contains(pop.output, R"(","payload":"p","attempts":0,"raw":false})")) << pop.output;
    const auto d0 = pop.output.find("\"delivery\":\"") + 12;
    const std::string delivery = pop.output.substr(d0, pop.output.find('"', d0) - d0);
    EXPECT_EQ(q({"ack", "jq", delivery}).status, 0);
}

TEST_F(QueueCli, NackRequeuesAndDeadLetters) {
    ASSERT_EQ(q({"push", "nq", "poison"}).status, 0);
    auto p1 = q({"pop", "nq", "--consumer", "c"});
    ASSERT_EQ(p1.status, 0);
    EXPECT_EQ(q({"nack", "nq", split(p1.output).first}).status, 0);
    auto p2 = qj({"pop", "nq", "--consumer", "c"});
    ASSERT_EQ(p2.status, 0);
    EXPECT_TRUE(contains(p2.output, R"("payload":"poison","attempts":1)")) << p2.output;
    EXPECT_EQ(q({"nack", "nq", "c/00000000000000000000000000000000", "--dead"}).status,
              code::no);  // unknown id
    const auto d0 = p2.output.find("\"delivery\":\"") + 12;
    const std::string delivery = p2.output.substr(d0, p2.output.find('"', d0) - d0);
    EXPECT_EQ(q({"nack", "nq", delivery, "--dead"}).status, 0);
    auto dead = q({"dead", "nq"});
    EXPECT_EQ(dead.status, 0);
    EXPECT_TRUE(contains(dead.output, " poison\n")) << dead.output;
    auto requeue = qj({"dead", "nq", "--requeue"});
    EXPECT_EQ(requeue.output, "{\"name\":\"nq\",\"requeued\":1}\n");
    auto p3 = q({"pop", "nq", "--consumer", "c"});
    EXPECT_EQ(split(p3.output).second, "poison");
}

TEST_F(QueueCli, ExpiredDeliveryIsRecoveredAndCannotBeAcked) {
    ASSERT_EQ(q({"push", "vq", "m"}).status, 0);
    auto p = q({"pop", "vq", "--consumer", "gone", "--visibility", "300ms"});
    ASSERT_EQ(p.status, 0);
    std::this_thread::sleep_for(600ms);  // the consumer's heartbeat (its lease) expires
    auto rec = qj({"recover", "vq"});
    EXPECT_EQ(rec.output, "{\"name\":\"vq\",\"requeued\":1,\"dead_lettered\":0,\"consumers\":1}\n");
    EXPECT_EQ(q({"ack", "vq", split(p.output).first}).status, code::no);
    auto again = qj({"pop", "vq"});
    EXPECT_TRUE(contains(again.output, R"("payload":"m","attempts":1)")) << again.output;
}
