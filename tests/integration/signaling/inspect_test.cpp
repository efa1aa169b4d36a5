// inspect_barrier() against a live barrier: generation, party count and arrivals.

#include <redcoord/core/errors.hpp>
#include <redcoord/signaling/barrier.hpp>
#include <redcoord/signaling/inspect.hpp>
#include <redcoord/signaling/signal_hub.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <future>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::eventually;
using redcoord::testing::local_server;

TEST(InspectBarrier, NewBarrier) {
    local_server s;
    connection_pool pool(s.endpoint());
    const auto v = inspect_barrier(pool, "none");
    EXPECT_EQ(v.generation, 0u);
    EXPECT_FALSE(v.parties);
    EXPECT_TRUE(v.arrivals.empty());
    EXPECT_TRUE(v.lapsed.empty());
}

TEST(InspectBarrier, ShowsArrivalsThenTheNextGeneration) {
    local_server s;
    connection_pool pool(s.endpoint());
    signal_hub hub(pool);
    barrier b1(hub, "stage", 3), b2(hub, "stage", 3), b3(hub, "stage", 3);
    auto w1 = std::async(std::launch::async, [&] { return b1.arrive_and_wait(10s); });
    auto w2 = std::async(std::launch::async, [&] { return b2.arrive_and_wait(10s); });
    ASSERT_TRUE(
        eventually([&] { return inspect_barrier(pool, "stage").arrivals.size() == 2; }, 5s));
    const auto v = inspect_barrier(pool, "stage");
    EXPECT_EQ(v.generation, 0u);
    EXPECT_EQ(v.parties, std::optional<std::size_t>(3));
    for (const auto& a : v.arrivals) {
        EXPECT_FALSE(a.member.empty());
        EXPECT_GT(a.lease_left, 0ms);
    }
    EXPECT_NE(v.arrivals[0].member, v.arrivals[1].member);

    EXPECT_EQ(b3.arrive_and_wait(10s), 0u);
    EXPECT_EQ(w1.get(), 0u);
    EXPECT_EQ(w2.get(), 0u);
    const auto after = inspect_barrier(pool, "stage");
    EXPECT_EQ(after.generation, 1u);
    EXPECT_TRUE(after.arrivals.empty());
}

TEST(InspectBarrier, BadNameAndForeignPrefix) {
    local_server s;
    connection_pool pool(s.endpoint());
    EXPECT_THROW((void)inspect_barrier(pool, ""), invalid_argument);
    signal_options o;
    o.prefix = "other:";
    signal_hub hub(pool, {}, o);
    barrier b(hub, "p", 1);
    EXPECT_EQ(b.arrive_and_wait(5s), 0u);
    EXPECT_EQ(inspect_barrier(pool, "p").generation, 0u);
    EXPECT_EQ(inspect_barrier(pool, "p", "other:").generation, 1u);
}
