// m5: unlock() does not wait for its release's reply, so a release sent as EVALSHA after the
// server's script cache was flushed must still run (as EVAL) once the reply is read.

#include "master_nodes.hpp"

#include <redcoord/lock/async.hpp>
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/lock/redlock.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/wait.hpp>

#include <boost/asio/use_future.hpp>
#include <gtest/gtest.h>

#include <future>
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
    redcoord::testing::master_nodes three(3);
    auto& servers = three.servers;
    auto& nodes = three.nodes;
    for (auto* p : nodes) (void)p->command({"PING"});  // warm: the rounds below need no connect
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

// The same over Redlock's nodes: each node's command is made again from the round for its
// EVAL (the link keeps none of it once written), and every node ends with the token, then
// without the key.
TEST(Redlock, AsyncAcquireAndReleaseAfterScriptFlushRunAsEvalOnEveryNode) {
    redcoord::testing::master_nodes three(3);
    auto& servers = three.servers;
    auto& nodes = three.nodes;
    redlock a(nodes, "flushed-async", {.timing = {.ttl = 30s}, .node_timeout = 500ms});
    ASSERT_TRUE(async_acquire(a, 1s, boost::asio::use_future).get());
    EXPECT_EQ(async_release(a, boost::asio::use_future).get(), std::optional<bool>(true));
    std::vector<long long> evals;
    for (auto& s : servers) {
        s->command({"SCRIPT", "FLUSH"});
        evals.push_back(s->command_calls("eval"));
    }
    const auto acquired = async_acquire(a, 1s, boost::asio::use_future).get();
    ASSERT_TRUE(acquired);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        EXPECT_NE(nodes[i]->command({"GET", a.key()}).text().find(acquired->token),
                  std::string::npos)
            << "node " << i;
        EXPECT_GT(nodes[i]->command({"PTTL", a.key()}).integer(), 29000) << "node " << i;
    }
    for (auto& s : servers) s->command({"SCRIPT", "FLUSH"});
    EXPECT_EQ(async_release(a, boost::asio::use_future).get(), std::optional<bool>(true));
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        EXPECT_EQ(nodes[i]->command({"EXISTS", a.key()}).integer(), 0) << "node " << i;
        EXPECT_GE(servers[i]->command_calls("eval") - evals[i], 2) << "node " << i;
    }
}

// A waiter's attempts after flushes: its first attempt runs as EVAL and is refused (the key is
// held); after a second flush, the attempt that follows the holder's release is refused as
// NOSCRIPT again and runs as EVAL, with the waiter's registration made again from its round,
// and gets the lock.
TEST(DistributedLock, AsyncWaiterAfterScriptFlushesGetsTheLockOnRelease) {
    local_server server;
    connection_pool pool{server.endpoint()};
    distributed_lock holder(pool, "flushed-wait", {.timing = {.ttl = 30s}});
    distributed_lock waiter(pool, "flushed-wait", {.timing = {.ttl = 30s}});
    ASSERT_TRUE(holder.try_lock());
    server.command({"SCRIPT", "FLUSH"});
    const auto evals = server.command_calls("eval");
    auto got = async_acquire(waiter, 10s, boost::asio::use_future);
    ASSERT_TRUE(redcoord::testing::eventually(
        [&] { return server.command_calls("eval") - evals >= 1; }, 5s))
        << "the waiter's first attempt did not run as EVAL";
    // The waiter is refused and waits for the release: its later attempts go as EVALSHA, and
    // a flush now makes the one after the release fail as NOSCRIPT first.
    ASSERT_EQ(got.wait_for(300ms), std::future_status::timeout);
    server.command({"SCRIPT", "FLUSH"});
    const auto evals_after = server.command_calls("eval");
    holder.unlock();
    ASSERT_EQ(got.wait_for(10s), std::future_status::ready);
    const auto acquired = got.get();
    ASSERT_TRUE(acquired);
    EXPECT_NE(pool.command({"GET", waiter.key()}).text().find(acquired->token), std::string::npos);
    // The holder's release and the waiter's winning attempt, each as EVAL.
    EXPECT_GE(server.command_calls("eval") - evals_after, 2);
    waiter.unlock();
}
