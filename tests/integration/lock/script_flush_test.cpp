// m5: unlock() does not wait for its release's reply, so a release sent as EVALSHA after the
// server's script cache was flushed must still run (as EVAL) once the reply is read.

#include <redcoord/lock/async.hpp>
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/lock/redlock.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/wait.hpp>

#include <boost/asio/use_future.hpp>
#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::local_server;

TEST(DistributedLock, m5_UnlockAfterScriptFlushReleases) {
    local_server server;
    connection_pool pool{server.endpoint()};
    distributed_lock a(pool, "flushed", {.timing = {.ttl = 30s}});
    a.lock();
    a.unlock();  // the pooled connection has run the release: from now on it sends EVALSHA
    std::this_thread::sleep_for(5ms);  // not a re-locking loop: the next release is sent at once
    a.lock();
    server.command({"SCRIPT", "FLUSH"});
    a.unlock();
    // The connection's next user reads the release's reply (NOSCRIPT) before its own.
    EXPECT_EQ(pool.command({"PING"}).text(), "PONG");
    EXPECT_EQ(pool.command({"EXISTS", a.key()}).integer(), 0)
        << "the release never ran: the key waits for its TTL";
    EXPECT_GE(server.command_calls("evalsha"), 1);  // the release really went as EVALSHA
    distributed_lock b(pool, "flushed", {.timing = {.ttl = 30s}});
    EXPECT_TRUE(b.try_lock());
    b.unlock();
}

TEST(Redlock, m5_UnlockAfterScriptFlushReleasesEveryNode) {
    auto servers = redcoord::testing::start_masters(3);
    std::vector<std::unique_ptr<connection_pool>> pools;
    std::vector<connection_pool*> nodes;
    for (auto& s : servers) {
        pools.push_back(std::make_unique<connection_pool>(s->endpoint()));
        nodes.push_back(pools.back().get());
        (void)nodes.back()->command({"PING"});  // warm: the rounds below need no connect
    }
    redlock a(nodes, "flushed", {.timing = {.ttl = 30s}, .node_timeout = 500ms});
    a.lock();
    a.unlock();
    // The detached release's replies are read by the next users; the pools' connections have
    // now run the release and send it as EVALSHA.
    for (auto* p : nodes) (void)p->command({"PING"});
    std::this_thread::sleep_for(5ms);  // not a re-locking loop: the next release is sent at once
    a.lock();
    for (auto& s : servers) s->command({"SCRIPT", "FLUSH"});
    a.unlock();
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        EXPECT_EQ(nodes[i]->command({"PING"}).text(), "PONG");
        EXPECT_EQ(nodes[i]->command({"EXISTS", a.key()}).integer(), 0)
            << "node " << i << " kept the key";
    }
}

TEST(DistributedLock, m5_HeldBackReleaseAfterScriptFlushReleases) {
    // The same with a release held back (a re-locking loop) and sent by the flush timer.
    local_server server;
    connection_pool pool{server.endpoint()};
    distributed_lock a(pool, "flushed", {.timing = {.ttl = 30s}, .defer_release = true});
    for (int i = 0; i < 3; ++i) {
        a.lock();
        a.unlock();
    }
    a.lock();
    server.command({"SCRIPT", "FLUSH"});
    a.unlock();  // held back: goes out as EVALSHA within a millisecond
    // Each check is a next user of a pooled connection, which reads the NOSCRIPT and runs it.
    EXPECT_TRUE(redcoord::testing::eventually(
        [&] {
            return pool.command({"EXISTS", a.key()}).integer() == 0;
        },
        2s))
        << "the release never ran: the key waits for its TTL";
}

// The pipelined link keeps only a command's EVALSHA while it is in flight and makes the EVAL
// from it when the server answers NOSCRIPT: acquire and release after a flush still run, and
// went as EVAL (an EVAL made wrongly would be refused, or lock another key).
TEST(DistributedLock, AsyncAcquireAndReleaseAfterScriptFlushRunAsEval) {
    local_server server;
    connection_pool pool{server.endpoint()};
    distributed_lock a(pool, "flushed-async", {.timing = {.ttl = 30s}});
    ASSERT_TRUE(async_acquire(a, 1s, boost::asio::use_future).get());
    EXPECT_EQ(async_release(a, boost::asio::use_future).get(), std::optional<bool>(true));
    server.command({"SCRIPT", "FLUSH"});
    const auto evals = server.command_calls("eval");
    const auto acquired = async_acquire(a, 1s, boost::asio::use_future).get();
    ASSERT_TRUE(acquired);
    EXPECT_NE(pool.command({"GET", a.key()}).text().find(acquired->token), std::string::npos);
    EXPECT_GT(pool.command({"PTTL", a.key()}).integer(), 29000);
    server.command({"SCRIPT", "FLUSH"});
    EXPECT_EQ(async_release(a, boost::asio::use_future).get(), std::optional<bool>(true));
    EXPECT_EQ(pool.command({"EXISTS", a.key()}).integer(), 0);
    EXPECT_GE(server.command_calls("eval") - evals, 2);
}
