// The limit part as a least-privilege ACL user: a user created from exactly limit_acl_needs()
// runs rate_limiter, sliding_window_limiter, semaphore and rw_lock (waits woken by a release,
// extend, the watchdog), and one from rw_lock_acl_needs() runs an rw_lock; a user missing a command their scripts call gets permission_error naming it.

#include <redcoord/limit/acl.hpp>
#include <redcoord/limit/inspect.hpp>
#include <redcoord/limit/rate_limiter.hpp>
#include <redcoord/limit/rw_lock.hpp>
#include <redcoord/limit/semaphore.hpp>
#include <redcoord/limit/sliding_window_limiter.hpp>
#include <redcoord/testing/local_server.hpp>

#include "../acl_support.hpp"

#include <gtest/gtest.h>

#include <future>
#include <thread>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::expect_refused;
using redcoord::testing::local_server;
using redcoord::testing::make_acl_user;
using redcoord::testing::without_command;

TEST(LimitAcl, EveryLimiterWorksWithExactlyItsNeeds) {
    local_server s;
    connection_pool pool(make_acl_user(s, "limit-user", limit_acl_needs()));
    rate_limiter rate(pool, "api", {.rate = 10, .burst = 2});
    EXPECT_TRUE(rate.try_acquire(2).allowed);
    EXPECT_FALSE(rate.try_acquire().allowed);
    sliding_window_limiter window(pool, "calls", {.limit = 1, .window = 60s});
    EXPECT_TRUE(window.try_acquire().allowed);
    EXPECT_FALSE(window.try_acquire().allowed);
    semaphore sem(pool, "slots", {.permits = 1, .timing = {.ttl = 30s}, .watchdog = true});
    auto held = sem.try_acquire();
    ASSERT_TRUE(held);
    EXPECT_TRUE(held->extend());
    auto waiter = std::async(std::launch::async, [&] { return sem.try_acquire_for(1, 10s); });
    std::this_thread::sleep_for(200ms);
    EXPECT_TRUE(held->release());
    EXPECT_TRUE(waiter.get());
}

TEST(LimitAcl, MissingScriptCommandIsNamed) {
    local_server s;
    connection_pool pool(
        make_acl_user(s, "limit-no-zadd", without_command(limit_acl_needs(), "zadd")));
    sliding_window_limiter window(pool, "calls", {.limit = 1, .window = 60s});
    (void)expect_refused("zadd", 5s, [&] { (void)window.try_acquire(); });
}

namespace {

// Every rw_lock script: shares, a writer's intent withdrawn by a timed wait, extend, a writer
// woken by the release.
void use_every_rw_lock_script(connection_pool& pool) {
    rw_lock reader(pool, "doc", {.timing = {.ttl = 30s}, .watchdog = true}),
        writer(pool, "doc", {.timing = {.ttl = 30s}});
    ASSERT_TRUE(reader.try_lock_shared());
    EXPECT_TRUE(reader.extend());
    EXPECT_FALSE(writer.try_lock_for(200ms));  // registers, then withdraws, its intent
    auto w = std::async(std::launch::async, [&] { return writer.try_lock_for(10s); });
    std::this_thread::sleep_for(200ms);
    reader.unlock_shared();
    EXPECT_TRUE(w.get());
    writer.unlock();
}

}  // namespace

TEST(LimitAcl, RwLockWorksWithExactlyItsOwnNeeds) {
    local_server s;
    connection_pool pool(make_acl_user(s, "rwlock-user", rw_lock_acl_needs()));
    use_every_rw_lock_script(pool);
}

TEST(LimitAcl, LimitNeedsCoverTheRwLock) {
    local_server s;
    connection_pool pool(make_acl_user(s, "limit-rw-user", limit_acl_needs()));
    use_every_rw_lock_script(pool);
}

TEST(LimitAcl, InspectUserReadsTheLimitersAndWritesNothing) {
    local_server s;
    connection_pool admin(s.endpoint());
    semaphore sem(admin, "slots", {.permits = 2, .timing = {.ttl = 30s}});
    auto held = sem.try_acquire();
    ASSERT_TRUE(held);
    rw_lock rw(admin, "doc", {.timing = {.ttl = 30s}});
    ASSERT_TRUE(rw.try_lock());
    rate_limiter rate(admin, "api", {.rate = 1, .period = 60s, .burst = 3});
    ASSERT_TRUE(rate.try_acquire().allowed);
    connection_pool pool(make_acl_user(s, "limit-inspect", limit_inspect_acl_needs()));
    EXPECT_EQ(inspect_semaphore(pool, "slots").held, 1u);
    EXPECT_TRUE(inspect_rw_lock(pool, "doc").writer);
    EXPECT_EQ(inspect_rate_limiter(pool, "api", {.rate = 1, .period = 60s, .burst = 3}).remaining,
              2u);
    EXPECT_EQ(inspect_rate_limiter(pool, "api").remaining, 2u);  // as stored
    EXPECT_EQ(inspect_semaphore(pool, "slots").permits, std::optional<std::uint64_t>(2));
    sliding_window_limiter window(admin, "logins", {.limit = 5, .window = 60s});
    ASSERT_TRUE(window.try_acquire(2).allowed);
    EXPECT_EQ(inspect_sliding_window(pool, "logins").remaining, 3u);
    rate_limiter as_inspector(pool, "api", {.rate = 1, .period = 60s, .burst = 3});
    redcoord::testing::expect_refused_any({"eval", "evalsha"}, 5s,
                                          [&] { (void)as_inspector.try_acquire(); });
    rw.unlock();
}
