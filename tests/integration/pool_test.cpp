#include <redcoord/core/errors.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/core/script.hpp>
#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

#include <functional>
#include <string_view>
#include <thread>
#include <vector>

using namespace redcoord;
using namespace std::chrono_literals;
using redcoord::testing::local_server;

TEST(Pool, ConnectsLazilyAndReuses) {
    local_server srv;
    connection_pool pool(srv.endpoint(), {.max_size = 2});
    EXPECT_EQ(pool.stats().created, 0u);
    for (int i = 0; i < 10; ++i) EXPECT_TRUE(pool.command({"PING"}).is_status("PONG"));
    auto st = pool.stats();
    EXPECT_EQ(st.created, 1u);
    EXPECT_EQ(st.idle, 1u);
    EXPECT_EQ(st.in_use, 0u);
}

TEST(Pool, ExhaustionIsTypedAfterTheWait) {
    local_server srv;
    connection_pool pool(srv.endpoint(), {.max_size = 1, .borrow_timeout = 50ms});
    auto held = pool.borrow();
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_THROW((void)pool.borrow(), pool_exhausted);
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 45ms);
    held.reset();
    EXPECT_NO_THROW((void)pool.borrow());
    EXPECT_GE(pool.stats().waits, 1u);
}

TEST(Pool, WaiterGetsTheReturnedConnection) {
    local_server srv;
    connection_pool pool(srv.endpoint(), {.max_size = 1, .borrow_timeout = 2000ms});
    auto held = pool.borrow();
    std::thread t([&] {
        std::this_thread::sleep_for(50ms);
        held.reset();
    });
    auto c = pool.borrow();
    EXPECT_TRUE(c->command({"PING"}).is_status("PONG"));
    t.join();
}

TEST(Pool, DiscardsPoisonedConnections) {
    local_server srv;
    auto e = srv.endpoint();
    e.command_timeout = 50ms;
    connection_pool pool(e, {.max_size = 1});
    {
        auto c = pool.borrow();
        EXPECT_THROW(c->command({"DEBUG", "SLEEP", "0.2"}), timeout_error);
    }
    EXPECT_EQ(pool.stats().discarded, 1u);
    EXPECT_TRUE(pool.command({"PING"}).is_status("PONG"));
    EXPECT_EQ(pool.stats().created, 2u);
}

TEST(Pool, IdleHealthCheckReplacesDeadConnections) {
    local_server srv;
    connection_pool pool(srv.endpoint(), {.max_size = 2, .idle_check_after = 0ms});
    EXPECT_TRUE(pool.command({"PING"}).is_status("PONG"));
    srv.restart();
    // The idle connection points at the dead process; the health check must replace it.
    EXPECT_TRUE(pool.command({"PING"}).is_status("PONG"));
    EXPECT_EQ(pool.stats().discarded, 1u);
}

// A restarted server leaves every idle connection dead. The first command to find one fails
// (its outcome is unknown: it may have been sent); the ones after it must not fail on the
// other dead idle connections, one by one. A heartbeat every lease / 3 that kept drawing dead
// connections let a job's lease lapse after a restart (chaos jobs/aof-restart).
TEST(Pool, AfterABrokenConnectionTheOtherIdleOnesAreCheckedBeforeUse) {
    local_server srv;
    connection_pool pool(srv.endpoint(), {.max_size = 4});
    {
        std::vector<pooled_connection> held;
        for (int i = 0; i < 4; ++i) held.push_back(pool.borrow());
        for (auto& c : held) EXPECT_TRUE(c->command({"PING"}).is_status("PONG"));
    }
    ASSERT_EQ(pool.stats().idle, 4u);
    srv.restart();
    EXPECT_THROW((void)pool.command({"PING"}), connection_error);
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(pool.command({"PING"}).is_status("PONG")) << i;
    EXPECT_EQ(pool.stats().discarded, 4u);
}

TEST(Pool, ConnectFailuresAreCountedAndDoNotLeakSlots) {
    local_server srv;
    connection_pool pool(srv.endpoint(), {.max_size = 1});
    srv.kill();
    for (int i = 0; i < 3; ++i) EXPECT_THROW((void)pool.borrow(), connection_error);
    EXPECT_EQ(pool.stats().errors, 3u);
    srv.restart();
    EXPECT_TRUE(pool.command({"PING"}).is_status("PONG"));
}

TEST(Pool, ManyThreadsShareABoundedPool) {
    local_server srv;
    connection_pool pool(srv.endpoint(), {.max_size = 3});
    std::vector<std::thread> ts;
    for (int t = 0; t < 8; ++t)
        ts.emplace_back([&] {
            for (int i = 0; i < 200; ++i) pool.command({"INCR", "counter"});
        });
    for (auto& t : ts) t.join();
    EXPECT_EQ(srv.command({"GET", "counter"}).text(), "1600");
    EXPECT_LE(pool.stats().created, 3u);
}

TEST(Pool, RejectsZeroSize) {
    EXPECT_THROW(connection_pool(endpoint{}, {.max_size = 0}), invalid_argument);
}

// C11: a READONLY reply means the pool reached a replica (a demoted master). Scripts get the
// same treatment as pool.command(): the connection is dropped and the idle ones closed, so
// the next borrow connects afresh (to the new master behind a moved address or, with
// Sentinel, to the one the resolver asks for, which it is told about).
TEST(Pool, C11_ReadonlyReplyToAScriptDropsTheConnectionLikeACommand) {
    local_server master;
    auto replica = local_server::replica_of(master);
    const script set_it("return redis.call('SET', KEYS[1], ARGV[1])");
    struct way {
        const char* name;
        std::function<void(connection_pool&)> write;
    };
    const way ways[] = {
        {"pool.command",
         [](connection_pool& p) {
             (void)p.command({"SET", "c11", "v"});
         }},
        {"script::run(pool)", [&](connection_pool& p) { (void)set_it.run(p, {"c11"}, {"v"}); }},
    };
    for (const auto& w : ways) {
        SCOPED_TRACE(w.name);
        connection_pool pool(replica->endpoint(), {.max_size = 2});
        {
            auto spare = pool.borrow();  // leaves one more idle connection behind
            (void)pool.command({"PING"});
        }
        ASSERT_EQ(pool.stats().idle, 2u);
        try {
            w.write(pool);
            FAIL() << "a replica accepted a write";
        } catch (const reply_error& e) {
            EXPECT_NE(std::string_view(e.what()).find("READONLY"), std::string_view::npos)
                << e.what();
        }
        const auto st = pool.stats();
        EXPECT_EQ(st.idle, 0u);
        EXPECT_EQ(st.discarded, 2u);
        EXPECT_EQ(st.in_use, 0u);
    }
}

// C8: borrow(milliseconds::max()) waits as long as it takes, it does not time out at once.
TEST(Pool, C8_HugeBorrowWaitDoesNotOverflow) {
    local_server srv;
    connection_pool pool(srv.endpoint(), {.max_size = 1});
    auto held = pool.borrow();
    std::thread giver([&] {
        std::this_thread::sleep_for(50ms);
        held.reset();
    });
    EXPECT_NO_THROW((void)pool.borrow(std::chrono::milliseconds::max()));
    giver.join();
}
