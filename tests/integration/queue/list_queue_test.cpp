#include <redcoord/core/errors.hpp>
#include <redcoord/queue/list_queue.hpp>
#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

#include <thread>

using namespace redcoord;
using namespace std::chrono_literals;
using redcoord::testing::local_server;

namespace {}  // namespace

TEST(ListQueue, FifoPopsInPushOrder) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    list_queue q(pool, "fifo");
    for (auto s : {"a", "b", "c"}) q.push(s);
    EXPECT_EQ(q.size(), 3u);
    EXPECT_EQ(q.try_pop(), "a");
    EXPECT_EQ(q.pop(100ms), "b");
    EXPECT_EQ(q.try_pop(), "c");
    EXPECT_EQ(q.try_pop(), std::nullopt);
}

TEST(ListQueue, LifoPopsNewestFirst) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    list_queue q(pool, "lifo", {.order = queue_order::lifo});
    for (auto s : {"a", "b", "c"}) q.push(s);
    EXPECT_EQ(q.pop(100ms), "c");
    EXPECT_EQ(q.try_pop(), "b");
    EXPECT_EQ(q.pop(0ms), "a");
    EXPECT_EQ(q.pop(0ms), std::nullopt);
}

TEST(ListQueue, BlockingPopTimesOutThenWakesOnPush) {
    local_server srv;
    auto ep = srv.endpoint();
    ep.command_timeout = 300ms;  // shorter than the block: the reply deadline must cover it
    connection_pool pool(ep);
    list_queue q(pool, "block");
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(q.pop(500ms), std::nullopt);
    auto waited = std::chrono::steady_clock::now() - t0;
    EXPECT_GE(waited, 450ms);
    EXPECT_LT(waited, 5s);

    std::thread producer([&] {
        std::this_thread::sleep_for(200ms);
        list_queue(pool, "block").push("late");
    });
    EXPECT_EQ(q.pop(10s), "late");
    producer.join();
}

TEST(ListQueue, BatchPushIsOneCommandAndKeepsOrder) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    list_queue q(pool, "batch");
    std::vector<std::string> items;
    for (int i = 0; i < 1000; ++i) items.push_back("m" + std::to_string(i));
    auto before = srv.command_calls("lpush");
    q.push_batch(items);
    EXPECT_EQ(srv.command_calls("lpush") - before, 1);
    EXPECT_EQ(q.size(), 1000u);
    for (int i = 0; i < 1000; ++i) ASSERT_EQ(q.try_pop(), items[static_cast<std::size_t>(i)]);
    q.push_batch(std::vector<std::string>{});
    EXPECT_EQ(q.size(), 0u);
}

TEST(ListQueue, BinaryAndLargePayloads) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    list_queue q(pool, "bin");
    std::string bin("\0\r\n\r\n\0x\xff", 8);
    q.push(bin);
    q.push("");
    std::string big(16 * 1024 * 1024, 'b');
    big[7] = '\0';
    big[big.size() - 2] = '\r';
    q.push(big);
    EXPECT_EQ(q.try_pop(), bin);
    EXPECT_EQ(q.try_pop(), std::string());
    EXPECT_EQ(q.pop(1s), big);
}

TEST(ListQueue, NameWithGlobCharsIsItsOwnKey) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    list_queue star(pool, "*"), a(pool, "a");
    a.push("x");
    EXPECT_EQ(star.try_pop(), std::nullopt);
    EXPECT_EQ(a.try_pop(), "x");
}

TEST(ListQueue, ServerDownIsATypedError) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    list_queue q(pool, "down");
    srv.kill();
    EXPECT_THROW(q.push("x"), connection_error);
    srv.restart();
    EXPECT_NO_THROW(q.push("x"));
}
