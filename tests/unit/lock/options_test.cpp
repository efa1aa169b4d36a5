// Options and names are checked before anything is sent (no server needed: pools connect lazily).
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/lock/redlock.hpp>

#include "options_check.hpp"

#include <gtest/gtest.h>

using namespace std::chrono_literals;
using namespace redcoord;

TEST(LockOptions, DefaultsAreValid) {
    EXPECT_NO_THROW(detail::validate(lock_options{}));
    EXPECT_NO_THROW(detail::validate(redlock_options{}, 5));
    EXPECT_EQ(redlock_options{}.node_timeout, 50ms);
    EXPECT_DOUBLE_EQ(redlock_options{}.timing.drift_factor, 0.01);
}

TEST(LockOptions, SingleInstanceRejectsBadFields) {
    auto bad = [](auto mutate) {
        lock_options o;
        mutate(o);
        EXPECT_THROW(detail::validate(o), invalid_argument);
    };
    bad([](lock_options& o) { o.timing.ttl = 0ms; });
    bad([](lock_options& o) { o.timing.ttl = -5ms; });
    bad([](lock_options& o) { o.timing.ttl = 2ms; });  // nothing left after the 2 ms drift
    bad([](lock_options& o) { o.timing.drift_factor = -0.1; });
    bad([](lock_options& o) { o.timing.drift_factor = 0.5; });
    bad([](lock_options& o) { o.timing.retry_jitter = -1ms; });
    bad([](lock_options& o) { o.timing.max_retry_interval = 0ms; });
    bad([](lock_options& o) {
        o.watchdog = true;
        o.max_extensions = 0;
    });
}

TEST(LockOptions, RedlockRejectsBadFields) {
    auto bad = [](auto mutate, std::size_t n = 5) {
        redlock_options o;
        mutate(o);
        EXPECT_THROW(detail::validate(o, n), invalid_argument);
    };
    bad([](redlock_options&) {}, 0);
    bad([](redlock_options& o) { o.timing.ttl = 0ms; });
    bad([](redlock_options& o) { o.node_timeout = 0ms; });
    bad([](redlock_options& o) {
        o.timing.ttl = 100ms;
        o.node_timeout = 100ms;
    });
    bad([](redlock_options& o) { o.timing.drift_factor = 1.0; });
    bad([](redlock_options& o) { o.retry_delay = 0ms; });
    bad([](redlock_options& o) { o.timing.retry_jitter = -1ms; });
    bad([](redlock_options& o) {
        o.watchdog = true;
        o.max_extensions = 0;
    });
}

TEST(LockOptions, ConstructorsCheckNamesNodesAndOptions) {
    connection_pool a(endpoint{}), b(endpoint{});
    EXPECT_THROW(distributed_lock(a, ""), invalid_argument);
    EXPECT_THROW(distributed_lock(a, "x\r\ny"), invalid_argument);
    EXPECT_THROW(distributed_lock(a, std::string(5000, 'x')), invalid_argument);
    EXPECT_THROW(distributed_lock(a, "r", lock_options{.timing = {.ttl = 0ms}}), invalid_argument);
    EXPECT_NO_THROW(distributed_lock(a, "any * glob ? [chars] are fine in a key"));
    EXPECT_THROW(redlock({}, "r"), invalid_argument);
    EXPECT_THROW(redlock({&a, nullptr}, "r"), invalid_argument);
    EXPECT_THROW(redlock({&a, &a}, "r"), invalid_argument);
    EXPECT_THROW(redlock({&a, &b}, ""), invalid_argument);
    EXPECT_NO_THROW(redlock({&a, &b}, "r"));
}

TEST(LockOptions, NotHeldIsAValueOrLockLost) {
    connection_pool a(endpoint{});
    distributed_lock l(a, "r");
    EXPECT_FALSE(l.held());
    EXPECT_FALSE(l.lost());
    EXPECT_FALSE(l.release());  // nothing to release: false, nothing sent
    EXPECT_FALSE(l.extend());
    EXPECT_THROW((void)l.fencing_token(), lock_lost);
    EXPECT_THROW(l.check_held(), lock_lost);
    redlock r({&a}, "r");
    EXPECT_FALSE(r.release());
    EXPECT_FALSE(r.extend());
    EXPECT_THROW(r.check_held(), lock_lost);
}

TEST(LockOptions, ReplicaTimeoutIsCheckedOnlyWithReplicas) {
    lock_options o;
    EXPECT_EQ(o.replication.replicas, 0u);
    EXPECT_EQ(o.replication.timeout, 100ms);
    o.replication.timeout = 0ms;
    EXPECT_NO_THROW(detail::validate(o));  // ignored without replicas
    o.replication.replicas = 1;
    EXPECT_THROW(detail::validate(o), invalid_argument);
    o.replication.timeout = -1ms;
    EXPECT_THROW(detail::validate(o), invalid_argument);
    o.replication.timeout = o.timing.ttl;  // WAIT must end well before the key could expire
    EXPECT_THROW(detail::validate(o), invalid_argument);
    o.replication.timeout = 100ms;
    EXPECT_NO_THROW(detail::validate(o));
}
