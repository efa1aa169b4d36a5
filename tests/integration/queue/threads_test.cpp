// Issue 15: a reliable_queue owns no thread. Its heartbeats and recovery run on the timer
// thread of the pool's runtime, shared by every queue (and lock, elector) of that runtime.

#include "queue_test_util.hpp"

#include <redcoord/core/runtime.hpp>
#include <redcoord/queue/reliable_queue.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <vector>

using namespace redcoord;
using namespace std::chrono_literals;
using redcoord::testing::local_server;

using redcoord::testing::process_threads;

TEST(ReliableQueue, TwentyStartedConsumersAddNoThread) {
    local_server srv;
    // A runtime of its own, so the count does not depend on other tests' objects.
    connection_pool pool(srv.endpoint(), {}, runtime::create());
    reliable_queue_options o{
        .visibility_timeout = 1000ms, .heartbeat_interval = 100ms, .recover_interval = 200ms};
    // One started consumer first: it starts the runtime's timer thread and a tick worker.
    reliable_queue first(pool, "threads", o);
    ASSERT_FALSE(first.pop(0ms));
    const auto& rt = pool.runtime();
    // Tick workers beyond the first join in only while ticks wait behind busy ones (a loaded
    // machine) and leave when idle, whatever the number of objects: count the other threads.
    const auto fixed_threads = [&] { return process_threads() - rt->stats().tick_workers; };
    const auto before = fixed_threads();
    std::vector<std::unique_ptr<reliable_queue>> qs;
    for (int i = 0; i < 20; ++i) {
        qs.push_back(std::make_unique<reliable_queue>(pool, "threads", o));
        ASSERT_FALSE(qs.back()->pop(0ms));  // registered, upkeep running
    }
    // Read until equal: a worker may start or end between the two counts.
    EXPECT_TRUE(queue_test::eventually([&] { return fixed_threads() == before; }))
        << fixed_threads() << " threads besides the tick workers, " << before << " before";
    // The upkeep of every consumer runs on the shared tick workers: ten heartbeats each, which
    // take longer than a visibility timeout, and still every consumer is registered and
    // live, with no failure.
    EXPECT_TRUE(queue_test::eventually([&] { return rt->stats().timer_ticks >= 21u * 10u; }));
    const auto s = first.stats();
    EXPECT_EQ(s.in_flight.size(), 21u);
    EXPECT_TRUE(s.expired.empty());
    for (auto& q : qs) EXPECT_EQ(q->heartbeat_failures(), 0u);
    qs.clear();
    EXPECT_TRUE(queue_test::eventually([&] { return fixed_threads() == before; }))
        << fixed_threads() << " threads besides the tick workers, " << before << " before";
    EXPECT_EQ(first.stats().in_flight.size(), 1u);  // closed consumers unregistered
}
