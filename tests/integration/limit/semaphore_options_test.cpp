// semaphore_options::fifo and ::replicas on real servers: permits in arrival order, a dead
// waiter at the head skipped once its entry lapses; acquisitions that count only once a
// replica acknowledged them (WAIT in the same write), as lock_options::replicas.

#include <redcoord/core/errors.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/limit/semaphore.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <mutex>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::eventually;
using redcoord::testing::local_server;
using redcoord::testing::master_and_replica;

namespace {

std::string key(const std::string& name, const char* part = nullptr) {
    return part ? make_key(default_prefix, "semaphore", name, part)
                : make_key(default_prefix, "semaphore", name);
}

}  // namespace

TEST(SemaphoreFifo, PermitsGoToWaitersInArrivalOrder) {
    local_server s;
    connection_pool pool(s.endpoint());
    const semaphore_options o{.permits = 1, .timing = {.ttl = 30s}, .fifo = true};
    semaphore sem(pool, "line", o);
    auto first = sem.try_acquire();
    ASSERT_TRUE(first);
    std::mutex mu;
    std::vector<int> order;
    std::vector<std::thread> waiters;
    for (int i = 0; i < 6; ++i) {
        waiters.emplace_back([&, i] {
            semaphore mine(pool, "line", o);
            auto p = mine.try_acquire_for(1, 60s);
            ASSERT_TRUE(p) << i;
            {
                std::lock_guard l(mu);
                order.push_back(i);
            }
            std::this_thread::sleep_for(20ms);
            EXPECT_TRUE(p->release());
        });
        // The next one starts once this one is queued: arrival order is the threads' order.
        ASSERT_TRUE(eventually([&] {
            return s.command({"ZCARD", key("line", "waiting")}).integer() == i + 1;
        }));
    }
    // A newcomer does not barge ahead of them. (Without fifo, the order is whoever the
    // release wakes first: this test fails most runs.)
    EXPECT_FALSE(sem.try_acquire());
    EXPECT_TRUE(first->release());
    for (auto& t : waiters) t.join();
    EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5}));
    EXPECT_EQ(s.command({"EXISTS", key("line", "queue")}).integer(), 0);
}

TEST(SemaphoreFifo, ADeadWaiterAtTheHeadIsSkippedOnceItsEntryLapses) {
    local_server s;
    connection_pool pool(s.endpoint());
    const semaphore_options o{
        .permits = 1, .timing = {.ttl = 30s, .max_retry_interval = 100ms}, .fifo = true};
    semaphore sem(pool, "line", o);
    // A waiter that died queued: first in line, its entry lapsing in 500 ms.
    const auto t = s.command({"TIME"}).elements();
    const auto now_us = std::stoll(t[0].text()) * 1'000'000 + std::stoll(t[1].text());
    (void)s.command({"ZADD", key("line", "waiting"), std::to_string(now_us + 500'000), "ghost"});
    (void)s.command({"RPUSH", key("line", "queue"), "ghost"});
    EXPECT_FALSE(sem.try_acquire());  // the permit is free, but the ghost is first
    auto got = sem.try_acquire_for(1, 20s);
    ASSERT_TRUE(got);
    EXPECT_EQ(s.command({"LPOS", key("line", "queue"), "ghost"}).is_nil(), true);
}

TEST(SemaphoreFifo, AWaiterThatGivesUpLeavesTheLine) {
    local_server s;
    connection_pool pool(s.endpoint());
    const semaphore_options o{.permits = 1, .timing = {.ttl = 30s}, .fifo = true};
    semaphore sem(pool, "line", o);
    auto held = sem.try_acquire();
    ASSERT_TRUE(held);
    EXPECT_FALSE(sem.try_acquire_for(1, 300ms));
    EXPECT_EQ(s.command({"LLEN", key("line", "queue")}).integer(), 0);
    EXPECT_EQ(s.command({"ZCARD", key("line", "waiting")}).integer(), 0);
}

TEST(SemaphoreReplicas, OptionsAreValidated) {
    local_server s;
    connection_pool pool(s.endpoint());
    semaphore_options o{.timing = {.ttl = 10s}, .replication = {.replicas = 1, .timeout = 0ms}};
    EXPECT_THROW(semaphore(pool, "r", o), invalid_argument);
    o.replication.timeout = -5ms;
    EXPECT_THROW(semaphore(pool, "r", o), invalid_argument);
    o.replication.timeout = o.timing.ttl;
    EXPECT_THROW(semaphore(pool, "r", o), invalid_argument);
    o.replication.replicas = 0;  // ignored without replicas
    EXPECT_NO_THROW(semaphore(pool, "r", o));
}

TEST(SemaphoreReplicas, AcquiresWhenTheReplicaAcknowledges) {
    master_and_replica s;
    semaphore sem(s.pool, "r",
                  {.permits = 2, .timing = {.ttl = 10s}, .replication = {.replicas = 1}});
    auto p = sem.try_acquire();
    ASSERT_TRUE(p);
    // Acknowledged: the replica already counts the permit.
    EXPECT_EQ(s.replica->command({"ZCARD", key("r")}).integer(), 1);
    EXPECT_TRUE(p->extend());
    EXPECT_TRUE(p->release());

    // More replicas than exist can never be confirmed: refused, and nothing left held.
    semaphore two(s.pool, "r",
                  {.permits = 2, .timing = {.ttl = 10s}, .replication = {.replicas = 2}});
    EXPECT_FALSE(two.try_acquire());
    EXPECT_EQ(s.master.command({"ZCARD", key("r")}).integer(), 0);
}

TEST(SemaphoreReplicas, PausedReplicaMeansNotAcquiredAndNoPermitLeft) {
    master_and_replica s;
    semaphore sem(s.pool, "r",
                  {.permits = 1, .timing = {.ttl = 10s}, .replication = {.replicas = 1}});
    auto held = sem.try_acquire();
    ASSERT_TRUE(held);
    s.replica->pause();
    // An unacknowledged extension keeps the old validity and is not a loss.
    const auto before = held->valid_until();
    EXPECT_FALSE(held->extend());
    EXPECT_EQ(held->valid_until(), before);
    EXPECT_FALSE(held->lost());
    EXPECT_TRUE(held->release());

    EXPECT_FALSE(sem.try_acquire());
    EXPECT_FALSE(sem.try_acquire_for(1, 400ms));  // retried every replica_timeout
    EXPECT_EQ(s.master.command({"ZCARD", key("r")}).integer(), 0);

    s.replica->resume();
    auto later = sem.try_acquire_for(1, 10s);
    ASSERT_TRUE(later);
    EXPECT_EQ(s.master.command({"ZCARD", key("r")}).integer(), 1);
}
