#include <redcoord/core/detail/pool_hooks.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/fan_out.hpp>
#include <redcoord/core/script.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <thread>

using namespace redcoord;
using namespace std::chrono_literals;
using redcoord::testing::local_server;

namespace {
struct five {
    std::vector<std::unique_ptr<local_server>> servers = redcoord::testing::start_masters(5);
    std::vector<std::unique_ptr<connection_pool>> pools;
    std::vector<connection_pool*> ptrs;
    five() {
        for (auto& s : servers) {
            auto e = s->endpoint();
            e.connect_timeout = 200ms;
            pools.push_back(std::make_unique<connection_pool>(e));
            ptrs.push_back(pools.back().get());
        }
    }
};
std::size_t count(const std::vector<node_result>& r, node_result::status st) {
    return static_cast<std::size_t>(
        std::count_if(r.begin(), r.end(), [&](auto& x) { return x.state == st; }));
}
}  // namespace

TEST(FanOut, AllNodesAnswer) {
    five f;
    auto r = fan_out(f.ptrs, {"SET", "k", "v", "NX", "PX", "10000"}, {.timeout = 500ms});
    ASSERT_EQ(r.size(), 5u);
    for (auto& x : r) {
        ASSERT_TRUE(x.answered()) << x.error;
        EXPECT_TRUE(x.value->is_status("OK"));
    }
    for (auto& s : f.servers) EXPECT_EQ(s->command({"GET", "k"}).text(), "v");
}

TEST(FanOut, DeadNodeIsAResultNotAnException) {
    five f;
    f.servers[1]->kill();
    f.servers[3]->kill();
    auto r = fan_out(f.ptrs, {"PING"}, {.timeout = 200ms});
    EXPECT_EQ(count(r, node_result::status::answered), 3u);
    EXPECT_EQ(count(r, node_result::status::connection_failed), 2u);
    EXPECT_FALSE(r[1].error.empty());
}

TEST(FanOut, HungNodeCostsAtMostTheDeadline) {
    five f;
    (void)fan_out(f.ptrs, {"PING"}, {.timeout = 500ms});  // warm connections
    f.servers[0]->pause();
    f.servers[2]->pause();
    auto t0 = std::chrono::steady_clock::now();
    auto r = fan_out(f.ptrs, {"PING"}, {.timeout = 60ms});
    auto took = std::chrono::steady_clock::now() - t0;
    EXPECT_LT(took, 200ms);
    EXPECT_EQ(count(r, node_result::status::timeout), 2u);
    EXPECT_EQ(count(r, node_result::status::answered), 3u);
    // Fresh connects to paused nodes are bounded by the same deadline.
    t0 = std::chrono::steady_clock::now();
    r = fan_out(f.ptrs, {"PING"}, {.timeout = 60ms});
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 200ms);
    EXPECT_EQ(count(r, node_result::status::answered), 3u);
    f.servers[0]->resume();
    f.servers[2]->resume();
}

TEST(FanOut, StopsAtQuorumAndLaterCommandsSkipStaleReplies) {
    five f;
    auto quorum = [](std::span<const node_result> rs) {
        return std::count_if(rs.begin(), rs.end(), [](auto& x) { return x.answered(); }) >= 3;
    };
    for (int round = 0; round < 50; ++round) {
        auto key = "k" + std::to_string(round);
        auto r = fan_out(f.ptrs, {"SET", key, "v"}, {.timeout = 500ms, .stop_when = quorum});
        EXPECT_GE(count(r, node_result::status::answered), 3u);
        // Every node's next reply must be the reply to the next command, never a stale one.
        auto g = fan_out(f.ptrs, {"GET", key}, {.timeout = 500ms});
        for (auto& x : g) {
            ASSERT_TRUE(x.answered()) << x.error;
            EXPECT_EQ(x.value->text(), "v");
        }
        for (auto* p : f.ptrs) EXPECT_EQ(p->command({"ECHO", key}).text(), key);
    }
}

// A flushed script cache on one node (its connection believes it has the script): that
// node answers NOSCRIPT, gets EVAL in the same fan-out, and its reply is the script's; a
// Lua error on another node is that node's reply value, not a failure.
TEST(FanOut, FallsBackToEvalOnNoscript) {
    five f;
    script s("return ARGV[1] .. redis.call('GET', KEYS[1])");
    std::vector<std::string_view> keys{"x"}, args{"got:"};
    for (auto& srv : f.servers) srv->command({"SET", "x", "0"});
    auto warm = fan_out(f.ptrs, s, keys, args, {.timeout = 500ms});  // every connection loads it
    for (auto& x : warm) ASSERT_TRUE(x.answered()) << x.error;
    f.servers[0]->command({"SET", "x", "1"});
    f.servers[0]->command({"SCRIPT", "FLUSH"});
    f.servers[1]->command({"DEL", "x"});
    auto r = fan_out(f.ptrs, s, keys, args, {.timeout = 500ms});
    ASSERT_TRUE(r[0].answered()) << r[0].error;
    EXPECT_EQ(r[0].value->text(), "got:1");
    ASSERT_TRUE(r[1].answered());
    EXPECT_TRUE(
        r[1].value->is_error());  // GET of a missing key concatenated: Lua error, reported as value
}

TEST(FanOut, RejectsBadArguments) {
    std::vector<connection_pool*> none{nullptr};
    EXPECT_THROW((void)fan_out(none, {"PING"}, {}), invalid_argument);
    std::vector<connection_pool*> empty;
    EXPECT_THROW((void)fan_out(empty, {"PING"}, {.timeout = 0ms}), invalid_argument);
}

namespace {
std::int64_t calls(local_server& s, const std::string& cmd) {
    const auto info = s.command({"INFO", "commandstats"}).text();
    const auto at = info.find("cmdstat_" + cmd + ":calls=");
    return at == std::string::npos ? 0 : std::stoll(info.substr(at + cmd.size() + 15));
}
}  // namespace

TEST(FanOut, ScriptRunsAsEvalOnceThenEvalshaAndSurvivesAFlush) {
    five f;
    script s("return redis.call('INCR', KEYS[1])");
    std::vector<std::string_view> keys{"n"}, args;
    for (int round = 1; round <= 3; ++round) {
        auto r = fan_out(f.ptrs, s, keys, args, {.timeout = 500ms});
        for (auto& x : r) {
            ASSERT_TRUE(x.answered()) << x.error;
            EXPECT_EQ(x.value->integer(), round);
        }
    }
    for (auto& srv : f.servers) {
        EXPECT_EQ(calls(*srv, "eval"), 1);  // the first round on each connection loads it
        EXPECT_EQ(calls(*srv, "evalsha"), 2);
    }
    // SCRIPT FLUSH behind the connections' backs: the node answers NOSCRIPT and gets EVAL
    // in the same fan-out, so its part still runs.
    f.servers[2]->command({"SCRIPT", "FLUSH"});
    auto r = fan_out(f.ptrs, s, keys, args, {.timeout = 500ms});
    for (auto& x : r) {
        ASSERT_TRUE(x.answered()) << x.error;
        EXPECT_EQ(x.value->integer(), 4);
    }
}

// An EVAL the ACL refuses loads nothing: the connection must not switch to EVALSHA, which
// would run the script from a cache someone else filled and let a user without `eval` act
// (ElectionAcl.MissingAnyNeededCommandIsPermissionErrorNamingIt, once rounds came quickly).
TEST(FanOut, AnEvalTheAclRefusesTeachesTheConnectionNothing) {
    local_server srv;
    script s("return redis.call('INCR', KEYS[1])");
    (void)srv.command({"SCRIPT", "LOAD", "return redis.call('INCR', KEYS[1])"});
    srv.command({"ACL", "SETUSER", "noeval", "on", ">pw", "~*", "+@all", "-eval"});
    auto e = srv.endpoint();
    e.user = "noeval";
    e.password = "pw";
    connection_pool pool(e);
    connection_pool* pools[] = {&pool};
    std::vector<std::string_view> keys{"n"}, args;
    for (int round = 0; round < 3; ++round) {
        auto r = fan_out(pools, s, keys, args, {.timeout = 2s});
        ASSERT_TRUE(r[0].answered()) << r[0].error;
        ASSERT_TRUE(r[0].value->is_error()) << round;
        EXPECT_EQ(r[0].value->text().rfind("NOPERM", 0), 0U) << r[0].value->text();
    }
    EXPECT_TRUE(srv.command({"GET", "n"}).is_nil());  // the script never ran
}

TEST(FanOut, DetachedSendsEverywhereAndNextUsersSkipTheReplies) {
    five f;
    script s("return redis.call('SET', KEYS[1], ARGV[1])");
    std::vector<std::string_view> keys{"d"}, args{"v"};
    auto r = fan_out(f.ptrs, s, keys, args, {.timeout = 500ms, .tuning = {.detach = true}});
    for (auto& x : r) EXPECT_EQ(x.state, node_result::status::pending);
    // The next command on each pool reads past the detached reply and gets its own.
    for (std::size_t i = 0; i < f.ptrs.size(); ++i)
        EXPECT_EQ(f.ptrs[i]->command({"GET", "d"}).text(), "v");
}

TEST(Script, SendDoesNotWaitAndTheNextCommandSkipsItsReply) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    script s("return redis.call('RPUSH', KEYS[1], ARGV[1])");
    for (int i = 0; i < 3; ++i) s.send(pool, {"l"}, {std::to_string(i)});
    EXPECT_EQ(pool.command({"LLEN", "l"}).integer(), 3);
    EXPECT_EQ(calls(srv, "eval"), 3);  // a send always goes as EVAL (see script::send)
    EXPECT_EQ(calls(srv, "evalsha"), 0);
    EXPECT_EQ(s.run(pool, {"l"}, {"x"}).integer(), 4);
}

TEST(Connection, WritesToAKilledServerThrowInsteadOfRaisingSigpipe) {
    local_server srv;
    connection c(srv.endpoint());
    script s("return 1");
    const std::span<const std::string_view> none;
    s.send(c, none, none);  // leaves a reply unread
    srv.kill();
    std::this_thread::sleep_for(50ms);
    // Each send writes without reading: a write after the peer reset the socket would, with
    // plain write(), raise SIGPIPE and kill this test.
    int failed = 0;
    for (int i = 0; i < 5; ++i) {
        try {
            s.send(c, none, none);
        } catch (const error&) {
            ++failed;
        }
    }
    EXPECT_GE(failed, 1);
    EXPECT_THROW((void)c.command({"PING"}), error);
}

// M5: a pool whose connections are all leased says nothing about its node. The fan-out
// waits for one until the last quarter of its deadline (a lease after that would leave no
// time for the reply), and if none comes free reports pool_exhausted ("nothing was sent"),
// never connection_failed (which redlock reads as "node down").
TEST(FanOut, M5_PoolExhaustionIsNotNodeDown) {
    local_server s;
    connection_pool pool(s.endpoint(), pool_options{.max_size = 1, .borrow_timeout = 2000ms});
    connection_pool* ptrs[] = {&pool};
    auto held = pool.borrow();
    const auto t0 = std::chrono::steady_clock::now();
    auto r = fan_out(ptrs, {"PING"}, {.timeout = 150ms});
    const auto took = std::chrono::steady_clock::now() - t0;
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].state, node_result::status::pool_exhausted) << r[0].error;
    EXPECT_FALSE(r[0].error.empty());
    EXPECT_GE(took, 150ms * 3 / 4 - 2ms);  // it waited for a connection up to the last quarter
    EXPECT_LT(took, 1000ms);
}

TEST(FanOut, M5_WaitsForAPooledConnectionWithinTheDeadline) {
    local_server s;
    connection_pool pool(s.endpoint(), pool_options{.max_size = 1, .borrow_timeout = 2000ms});
    connection_pool* ptrs[] = {&pool};
    auto held = pool.borrow();
    std::thread giver([&] {
        std::this_thread::sleep_for(50ms);
        held.reset();
    });
    auto r = fan_out(ptrs, {"PING"}, {.timeout = 1000ms});
    giver.join();
    ASSERT_TRUE(r[0].answered()) << r[0].error;
    EXPECT_TRUE(r[0].value->is_status("PONG"));
}

// M5: the wait is capped by the pool's borrow_timeout too, not only by the round.
TEST(FanOut, M5_WaitIsCappedByBorrowTimeout) {
    local_server s;
    connection_pool pool(s.endpoint(), pool_options{.max_size = 1, .borrow_timeout = 30ms});
    connection_pool* ptrs[] = {&pool};
    auto held = pool.borrow();
    const auto t0 = std::chrono::steady_clock::now();
    auto r = fan_out(ptrs, {"PING"}, {.timeout = 2000ms});
    EXPECT_EQ(r[0].state, node_result::status::pool_exhausted) << r[0].error;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 1000ms);
}

// m5: a fire-and-forget script whose reply nobody reads must not be lost to SCRIPT FLUSH: it
// goes as EVAL, which no flushed cache refuses (issue 33: a re-run by the connection's next
// reader never came when the connection idled).
TEST(Script, m5_PipelinedSendSurvivesScriptFlush) {
    local_server srv;
    connection c(srv.endpoint());
    script s("return redis.call('SET', KEYS[1], ARGV[1])");
    (void)s.run(c, {"warm"}, {"1"});  // the connection now sends this script as EVALSHA
    srv.command({"SCRIPT", "FLUSH"});
    const std::vector<std::string_view> keys{"released"}, args{"v"};
    s.send(c, keys, args);
    EXPECT_EQ(c.command({"PING"}).text(), "PONG");
    const auto got = c.command({"GET", "released"});
    ASSERT_FALSE(got.is_nil()) << "the pipelined script never ran";
    EXPECT_EQ(got.text(), "v");
    EXPECT_EQ(c.command({"ECHO", "in step"}).text(), "in step");
    EXPECT_EQ(calls(srv, "evalsha"), 0);
    EXPECT_EQ(calls(srv, "eval"), 2);  // the warm-up and the send
}

// m5: sends pipelined with a reader's own commands keep their replies in step.
TEST(Script, m5_ReRunAfterFlushKeepsAPipelineInStep) {
    local_server srv;
    connection c(srv.endpoint());
    script s("return redis.call('RPUSH', KEYS[1], ARGV[1])");
    (void)s.run(c, {"l"}, {"a"});
    srv.command({"SCRIPT", "FLUSH"});
    const std::vector<std::string_view> keys{"l"}, b{"b"}, cc{"c"};
    s.send(c, keys, b);
    s.send(c, keys, cc);
    const auto r = c.pipeline({{"ECHO", "1"}, {"ECHO", "2"}, {"ECHO", "3"}});
    ASSERT_EQ(r.size(), 3u);
    EXPECT_EQ(r[0].text(), "1");
    EXPECT_EQ(r[1].text(), "2");
    EXPECT_EQ(r[2].text(), "3");
    const auto l = c.command({"LRANGE", "l", "0", "-1"});
    ASSERT_EQ(l.elements().size(), 3u);
    EXPECT_EQ(l.elements()[1].text(), "b");
    EXPECT_EQ(l.elements()[2].text(), "c");
    EXPECT_EQ(c.command({"ECHO", "in step"}).text(), "in step");
}

// m5: a detached fan-out (a release) after a flush of the cache still runs on every node: it
// goes as EVAL, whoever reads its replies.
TEST(FanOut, m5_DetachedSendSurvivesScriptFlush) {
    five f;
    script s("return redis.call('SET', KEYS[1], ARGV[1])");
    std::vector<std::string_view> keys{"d"}, args{"v"};
    for (auto& x :
         fan_out(f.ptrs, s, std::vector<std::string_view>{"warm"}, args, {.timeout = 500ms}))
        ASSERT_TRUE(x.answered()) << x.error;
    for (auto& srv : f.servers) srv->command({"SCRIPT", "FLUSH"});
    auto r = fan_out(f.ptrs, s, keys, args, {.timeout = 500ms, .tuning = {.detach = true}});
    for (auto& x : r) EXPECT_EQ(x.state, node_result::status::pending);
    for (std::size_t i = 0; i < f.ptrs.size(); ++i) {
        // Seen on another connection, before anyone reads the detached one's reply.
        EXPECT_TRUE(redcoord::testing::eventually(
            [&] {
                return !f.servers[i]->command({"GET", "d"}).is_nil();
            },
            1s))
            << "node " << i << ": the detached script never ran";
        EXPECT_EQ(f.ptrs[i]->command({"PING"}).text(), "PONG");
        EXPECT_EQ(f.ptrs[i]->command({"ECHO", "in step"}).text(), "in step");
    }
}

// m5: stragglers of a round decided at quorum (an acquire) must not run later: for them
// "did not run" is the safe side, so their NOSCRIPT is only skipped.
TEST(FanOut, m5_QuorumStragglersAreNotReRunAfterAFlush) {
    five f;
    script s("return redis.call('SET', KEYS[1], ARGV[1])");
    std::vector<std::string_view> keys{"q"}, args{"v"};
    for (auto& x :
         fan_out(f.ptrs, s, std::vector<std::string_view>{"warm"}, args, {.timeout = 500ms}))
        ASSERT_TRUE(x.answered()) << x.error;
    for (auto& srv : f.servers) srv->command({"SCRIPT", "FLUSH"});
    f.servers[3]->pause();
    f.servers[4]->pause();
    auto quorum = [](std::span<const node_result> rs) {
        return std::count_if(rs.begin(), rs.end(), [](auto& x) { return x.answered(); }) >= 3;
    };
    auto r = fan_out(f.ptrs, s, keys, args, {.timeout = 500ms, .stop_when = quorum});
    f.servers[3]->resume();
    f.servers[4]->resume();
    for (std::size_t i = 0; i < 3; ++i) ASSERT_TRUE(r[i].answered()) << r[i].error;
    for (std::size_t i = 3; i < 5; ++i) {
        ASSERT_EQ(r[i].state, node_result::status::pending);
        EXPECT_EQ(f.ptrs[i]->command({"PING"}).text(), "PONG");
        EXPECT_TRUE(f.ptrs[i]->command({"GET", "q"}).is_nil()) << "node " << i;
        EXPECT_EQ(f.ptrs[i]->command({"ECHO", "in step"}).text(), "in step");
    }
}

// Issue 23: on a loaded host a connect + handshake can outlast a short round. Such a node is
// "still connecting" (not down, not timed out), and its connect is not thrown away: it goes
// on in the background and the next round uses it.
TEST(FanOut, ConnectOutlastingTheRoundIsConnectingAndServesTheNextRound) {
    five f;
    for (std::size_t i = 0; i < f.pools.size(); ++i) {
        auto e = f.servers[i]->endpoint();
        redcoord::detail::set_pool_connector(*f.pools[i], [e] {
            std::this_thread::sleep_for(120ms);  // a slow connect (a loaded machine)
            return std::make_unique<connection>(e);
        });
    }
    auto t0 = std::chrono::steady_clock::now();
    auto r = fan_out(f.ptrs, {"PING"}, {.timeout = 50ms});
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 100ms) << "the round waited for the connects";
    EXPECT_EQ(count(r, node_result::status::connecting), 5u);
    std::this_thread::sleep_for(150ms);  // the connects finish in the background
    r = fan_out(f.ptrs, {"PING"}, {.timeout = 50ms});
    EXPECT_EQ(count(r, node_result::status::answered), 5u);
}

// A round decided by the nodes that had an idle connection never reaches the others: they
// are `not_sent` (nothing runs there), not `pending` (sent, may still run). A Redlock re-lock
// counted on `pending` to renew the previous holding there, and left it behind for its TTL.
TEST(FanOut, NodesARoundDecidedBeforeReachingAreNotSent) {
    five f;
    script s("return redis.call('SET', KEYS[1], ARGV[1])");
    std::vector<std::string_view> keys{"ns"}, args{"v"};
    // Warm only nodes 0..2: they have an idle connection, 3 and 4 need a connect.
    for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(f.ptrs[i]->command({"PING"}).text(), "PONG");
    auto three = [](std::span<const node_result> rs) {
        return std::count_if(rs.begin(), rs.end(), [](auto& x) { return x.answered(); }) >= 3;
    };
    auto r = fan_out(f.ptrs, s, keys, args, {.timeout = 500ms, .stop_when = three});
    for (std::size_t i = 0; i < 3; ++i) ASSERT_TRUE(r[i].answered()) << r[i].error;
    for (std::size_t i = 3; i < 5; ++i) {
        EXPECT_EQ(r[i].state, node_result::status::not_sent) << "node " << i;
        EXPECT_FALSE(r[i].error.empty());
        EXPECT_TRUE(f.servers[i]->command({"GET", "ns"}).is_nil()) << "node " << i << " ran it";
    }
}
