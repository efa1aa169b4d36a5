// The runtime's registries: pools and links are shared per endpoint, pools know their
// runtime, and the default runtime serves pools made without one.
#include <redcoord/core/detail/pubsub_mux.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

#include <thread>
#include <vector>

using namespace redcoord;
using redcoord::testing::local_server;

TEST(Runtime, PoolsAreSharedPerEndpointWhileSomeoneHoldsThem) {
    local_server a, b;
    auto rt = runtime::create();
    auto pa = rt->pool(a.endpoint());
    EXPECT_EQ(rt->pool(a.endpoint()), pa);
    EXPECT_NE(rt->pool(b.endpoint()), pa);
    EXPECT_EQ(pa->runtime(), rt);
    EXPECT_EQ(pa->command({"PING"}).text(), "PONG");
    auto other_db = a.endpoint();
    other_db.db = 1;
    EXPECT_NE(rt->pool(other_db), pa);  // a different db is a different pool
    EXPECT_EQ(rt->stats().pools, 1u);   // only pa is still held
    pa.reset();
    EXPECT_EQ(rt->stats().pools, 0u);
}

TEST(Runtime, PoolsWithoutARuntimeUseTheSharedOne) {
    local_server a;
    connection_pool p(a.endpoint());
    EXPECT_EQ(p.runtime(), runtime::shared());
    auto rt = runtime::create();
    connection_pool q(a.endpoint(), {}, rt);
    EXPECT_EQ(q.runtime(), rt);
}

TEST(Runtime, LinksLiveWhileHeld) {
    local_server a;
    auto rt = runtime::create();
    auto m = rt->pubsub(a.endpoint());
    auto l = m->listen("ch", {[](const pubsub_message&) {}, {}});
    ASSERT_TRUE(l.wait_confirmed(std::chrono::milliseconds(3000)));
    EXPECT_EQ(rt->stats().pubsub_links, 1u);
    l.reset();
    m.reset();
    EXPECT_EQ(rt->stats().pubsub_links, 0u);
}

// The connection budget of a waiting process: after a burst of concurrent borrows the pool
// keeps at most max_idle connections open, and it never closes one a borrower waits for.
TEST(Runtime, PoolShrinksToMaxIdleAfterABurst) {
    local_server a;
    connection_pool pool(a.endpoint(), {.max_size = 12, .max_idle = 3});
    {
        std::vector<pooled_connection> leased;
        for (int i = 0; i < 12; ++i) leased.push_back(pool.borrow());
        EXPECT_EQ(pool.stats().in_use, 12u);
    }
    const auto st = pool.stats();
    EXPECT_EQ(st.idle, 3u);
    EXPECT_EQ(st.trimmed, 9u);
    auto clients = a.command({"INFO", "clients"}).text();
    EXPECT_NE(clients.find("connected_clients:4"), std::string::npos)
        << clients;  // 3 idle + this INFO
}

TEST(Runtime, PoolKeepsAConnectionABorrowerWaitsFor) {
    local_server a;
    connection_pool pool(a.endpoint(), {.max_size = 1, .max_idle = 0});
    auto held = pool.borrow();
    std::thread t([&] {
        auto c = pool.borrow(std::chrono::milliseconds(3000));  // waits for `held`
        EXPECT_EQ(c->command({"PING"}).text(), "PONG");
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    held.reset();
    t.join();
    EXPECT_EQ(pool.stats().created, 1u);  // handed over, not closed and re-opened
}
