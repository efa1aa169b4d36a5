#pragma once
// Checks shared by the tests that run the parts' async operations on another kind of endpoint
// (TLS: async_tls_test.cpp; Sentinel: tests/fault/sentinel/async_failover_test.cpp): the
// requests go over the event loop's link, the wake notices over the pub/sub link.

#include <redcoord/core/pool.hpp>
#include <redcoord/lock/async.hpp>
#include <redcoord/queue/async.hpp>
#include <redcoord/queue/reliable_queue.hpp>

#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <future>
#include <string>

namespace async_wake_checks {

using namespace std::chrono_literals;

// An async_acquire on `name`, held by another object of `pool`, waits; the holder's release
// wakes it (well before its fallback), it holds the lock (`stored(key)` reads the server's
// value of a key), and async_release frees it.
inline void lock_waiter_woken_by_release(
    redcoord::connection_pool& pool, const std::string& name,
    const std::function<std::string(const std::string&)>& stored) {
    redcoord::distributed_lock holder(pool, name, {.timing = {.ttl = 60s}});
    redcoord::distributed_lock waiter(pool, name, {.timing = {.ttl = 60s}});
    ASSERT_TRUE(holder.try_lock());
    auto got = redcoord::async_acquire(waiter, 30s, boost::asio::use_future);
    EXPECT_EQ(got.wait_for(300ms), std::future_status::timeout);
    const auto t0 = std::chrono::steady_clock::now();
    holder.unlock();
    ASSERT_EQ(got.wait_for(20s), std::future_status::ready);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s)
        << "woken by its fallback, not by the release";
    auto a = got.get();
    ASSERT_TRUE(a);
    EXPECT_EQ(stored(waiter.key()), a->token);
    EXPECT_EQ(redcoord::async_release(waiter, boost::asio::use_future).get(),
              std::optional<bool>(true));
}

// An async_pop on the empty queue `name` of `pool` (no re-check of its own within the test)
// waits; a push of `payload` ends it with that message, which is then acked.
inline void pop_woken_by_push(redcoord::connection_pool& pool, const std::string& name,
                              const std::string& payload) {
    redcoord::reliable_queue q(pool, name, {.async_pop_recheck = std::chrono::hours(1)});
    auto popped = redcoord::async_pop(q, 30s, boost::asio::use_future);
    EXPECT_EQ(popped.wait_for(300ms), std::future_status::timeout);
    const auto id = q.push(payload);
    ASSERT_EQ(popped.wait_for(20s), std::future_status::ready);
    auto d = popped.get();
    ASSERT_TRUE(d);
    EXPECT_EQ(d->id, id);
    EXPECT_EQ(d->payload, payload);
    EXPECT_TRUE(q.ack(*d));
}

}  // namespace async_wake_checks
