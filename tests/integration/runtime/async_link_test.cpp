// The event loop's pipelined link (core/detail/async_link.hpp) against real redis-server
// processes: replies matched in order under pipelining, deadlines that drop late replies,
// a refused handshake that runs nothing, a stalled server that breaks the link, reconnects.

#include <redcoord/core/detail/async_link.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/testing/local_server.hpp>

#include <boost/asio/io_context.hpp>

#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <vector>

using namespace std::chrono_literals;
using namespace redcoord;
namespace asio = boost::asio;
using redcoord::detail::async_link;
using redcoord::detail::link_outcome;
using redcoord::testing::local_server;
using clock_type = std::chrono::steady_clock;

namespace {

// Runs `argv` on `link` and waits for its outcome.
link_outcome run(async_link& link, std::vector<std::string> argv,
                 std::chrono::milliseconds within = 5s) {
    std::promise<link_outcome> p;
    link.exec(std::move(argv), clock_type::now() + within,
              [&](link_outcome o) { p.set_value(std::move(o)); });
    return p.get_future().get();
}

template <class E>
bool failed_with(const link_outcome& o) {
    if (!o.failure) return false;
    try {
        std::rethrow_exception(o.failure);
    } catch (const E&) {
        return true;
    } catch (...) {
        return false;
    }
}

}  // namespace

TEST(AsyncLink, PipelinedCommandsGetTheirOwnRepliesInOrder) {
    local_server server;
    auto rt = runtime::create();
    auto link = rt->link(server.endpoint());
    constexpr int n = 2000;
    std::mutex mu;
    std::vector<std::string> got(n);
    std::promise<void> all;
    int left = n;
    for (int i = 0; i < n; ++i)
        link->exec({"ECHO", "v" + std::to_string(i)}, clock_type::now() + 10s,
                   [&, i](link_outcome o) {
                       std::lock_guard l(mu);
                       got[i] = o.result.answered() ? o.result.value->text() : o.result.error;
                       if (--left == 0) all.set_value();
                   });
    ASSERT_EQ(all.get_future().wait_for(30s), std::future_status::ready);
    for (int i = 0; i < n; ++i) ASSERT_EQ(got[i], "v" + std::to_string(i));
    EXPECT_EQ(rt->link(server.endpoint()), link);  // one link per endpoint and runtime
}

// A burst larger than one write (the link writes at most about 64 KiB at a time, so that a
// burst's commands are not all copied into one buffer): every command arrives whole and in
// order, and each gets its own reply.
TEST(AsyncLink, ABurstLargerThanOneWriteArrivesWholeAndInOrder) {
    local_server server;
    auto rt = runtime::create();
    auto link = rt->link(server.endpoint());
    constexpr int n = 400;  // 400 KiB of values: several writes
    std::mutex mu;
    std::vector<std::string> got(n);
    std::promise<void> all;
    int left = n;
    const auto value = [](int i) { return std::string(1024, static_cast<char>('a' + i % 26)); };
    for (int i = 0; i < n; ++i)
        link->exec({"SET", "burst:" + std::to_string(i), value(i)}, clock_type::now() + 20s,
                   [&, i](link_outcome o) {
                       std::lock_guard l(mu);
                       got[i] = o.result.answered() ? o.result.value->text() : o.result.error;
                       if (--left == 0) all.set_value();
                   });
    ASSERT_EQ(all.get_future().wait_for(30s), std::future_status::ready);
    for (int i = 0; i < n; ++i) ASSERT_EQ(got[i], "OK") << i;
    for (int i = 0; i < n; i += 37)
        EXPECT_EQ(run(*link, {"GET", "burst:" + std::to_string(i)}).result.value->text(), value(i));
}

TEST(AsyncLink, AnErrorReplyIsAnAnswerAndTheLinkGoesOn) {
    local_server server;
    auto rt = runtime::create();
    auto link = rt->link(server.endpoint());
    const auto bad = run(*link, {"NOSUCHCOMMAND"});
    ASSERT_TRUE(bad.result.answered());
    EXPECT_TRUE(bad.result.value->is_error());
    EXPECT_EQ(run(*link, {"PING"}).result.value->text(), "PONG");
}

TEST(AsyncLink, APausedServerTimesOutTheCommandAndItsLateReplyIsDropped) {
    local_server server;
    auto ep = server.endpoint();
    ep.command_timeout = 10s;  // the deadline below is shorter: the link must stay up
    auto rt = runtime::create();
    auto link = rt->link(ep);
    ASSERT_EQ(run(*link, {"PING"}).result.value->text(), "PONG");
    server.pause();
    const auto late = run(*link, {"ECHO", "late"}, 200ms);
    EXPECT_EQ(late.result.state, node_result::status::timeout);
    EXPECT_TRUE(late.sent);
    EXPECT_TRUE(failed_with<timeout_error>(late));
    server.resume();
    // The late reply arrives first and belongs to nobody now; the next command gets its own.
    EXPECT_EQ(run(*link, {"ECHO", "next"}).result.value->text(), "next");
}

TEST(AsyncLink, AServerStalledPastCommandTimeoutBreaksTheLinkAndItReconnects) {
    local_server server;
    auto ep = server.endpoint();
    ep.command_timeout = 300ms;
    auto rt = runtime::create();
    auto link = rt->link(ep);
    ASSERT_EQ(run(*link, {"PING"}).result.value->text(), "PONG");
    server.pause();
    const auto t0 = clock_type::now();
    const auto o = run(*link, {"PING"}, 10s);
    EXPECT_LT(clock_type::now() - t0, 5s) << "the link did not give up on a stalled server";
    EXPECT_TRUE(o.sent);
    EXPECT_FALSE(o.result.answered());
    server.resume();
    EXPECT_EQ(run(*link, {"ECHO", "again"}).result.value->text(), "again");
}

TEST(AsyncLink, ARestartedServerFailsWhatWasInFlightAndTheNextCommandReconnects) {
    local_server server;
    auto rt = runtime::create();
    auto link = rt->link(server.endpoint());
    ASSERT_EQ(run(*link, {"SET", "k", "v"}).result.value->text(), "OK");
    server.kill();
    const auto down = run(*link, {"GET", "k"});
    EXPECT_FALSE(down.result.answered());
    EXPECT_TRUE(failed_with<connection_error>(down));
    server.restart();
    EXPECT_EQ(run(*link, {"ECHO", "back"}).result.value->text(), "back");
}

TEST(AsyncLink, ARefusedHandshakeRunsNothingBehindIt) {
    local_server server;
    auto ep = server.endpoint();
    ep.db = 100000;  // SELECT is refused: a SET pipelined behind it must not run on db 0
    auto rt = runtime::create();
    auto link = rt->link(ep);
    const auto o = run(*link, {"SET", "must-not-exist", "1"});
    EXPECT_FALSE(o.result.answered());
    EXPECT_FALSE(o.sent);
    EXPECT_TRUE(failed_with<reply_error>(o));
    EXPECT_EQ(server.command({"EXISTS", "must-not-exist"}).integer(), 0);
}

TEST(AsyncLink, AWrongPasswordIsAnAuthErrorAndNothingListeningAConnectionError) {
    local_server server({.password = "right"});
    auto ep = server.endpoint();
    ep.password = "wrong";
    auto rt = runtime::create();
    EXPECT_TRUE(failed_with<auth_error>(run(*rt->link(ep), {"PING"})));
    endpoint nowhere;
    nowhere.port = redcoord::testing::free_port();
    const auto o = run(*rt->link(nowhere), {"PING"});
    EXPECT_TRUE(failed_with<connection_error>(o));
    EXPECT_FALSE(o.sent);
}

TEST(AsyncLink, AClusterEndpointIsRefusedAndASentinelOneNeedsItsResolver) {
    auto rt = runtime::create();
    endpoint cluster;
    cluster.cluster_nodes.push_back({"127.0.0.1", 7000});
    try {
        (void)rt->link(cluster);
        ADD_FAILURE() << "a Cluster endpoint was taken";
    } catch (const invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("Cluster"), std::string::npos) << e.what();
    }
    endpoint sentinel;
    sentinel.sentinels.push_back({"127.0.0.1", 26379});
    sentinel.service = "m";
    asio::io_context io;
    EXPECT_THROW((void)async_link::create(io, sentinel), invalid_argument);
}
