// One callback style for every subscription (issue 15, review 2.5 "Callbacks"):
// `on_<event>(slot)` returns a [[nodiscard]] boost::signals2::scoped_connection, and dropping
// it disconnects the slot. No server: constructing these objects sends nothing.

#include <redcoord/core/pool.hpp>
#include <redcoord/core/sentinel.hpp>
#include <redcoord/election/leader_elector.hpp>
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/lock/fair_lock.hpp>
#include <redcoord/lock/redlock.hpp>
#include <redcoord/signaling/signal_hub.hpp>

#include <gtest/gtest.h>

#include <boost/signals2/connection.hpp>

#include <string>
#include <type_traits>
#include <utility>

namespace {

using boost::signals2::scoped_connection;
using redcoord::host_port;

template <class T>
T& ref();

static_assert(
    std::is_same_v<decltype(ref<redcoord::distributed_lock>().on_lost({})), scoped_connection>);
static_assert(std::is_same_v<decltype(ref<redcoord::redlock>().on_lost({})), scoped_connection>);
static_assert(std::is_same_v<decltype(ref<redcoord::fair_lock>().on_lost({})), scoped_connection>);
static_assert(
    std::is_same_v<decltype(ref<redcoord::leader_elector>().on_elected({})), scoped_connection>);
static_assert(
    std::is_same_v<decltype(ref<redcoord::leader_elector>().on_revoked({})), scoped_connection>);
static_assert(std::is_same_v<decltype(ref<redcoord::leader_elector>().on_leader_changed({})),
                             scoped_connection>);
static_assert(std::is_same_v<decltype(ref<redcoord::sentinel_resolver>().on_master_changed({})),
                             scoped_connection>);
static_assert(std::is_same_v<decltype(ref<redcoord::signal_hub>().on("c", {})), scoped_connection>);

// Ports nothing listens on: nothing here connects anyway.
redcoord::endpoint nowhere(int port = 1) {
    return redcoord::parse_endpoint("redis://127.0.0.1:" + std::to_string(port));
}

// Subscribes through `subscribe`, keeps a plain copy of the connection, and checks that the
// slot is connected while the returned object lives and disconnected once it is dropped.
template <class Subscribe>
void expect_scoped(Subscribe&& subscribe) {
    boost::signals2::connection watch;
    {
        scoped_connection kept = subscribe();
        watch = kept;
        EXPECT_TRUE(watch.connected());
        EXPECT_TRUE(kept.connected());
    }
    EXPECT_FALSE(watch.connected()) << "dropping the returned connection must disconnect the slot";

    // An explicit disconnect works too, and a released connection keeps the slot.
    scoped_connection kept = subscribe();
    watch = kept;
    kept.disconnect();
    EXPECT_FALSE(watch.connected());
    {
        scoped_connection released = subscribe();
        watch = released.release();
    }
    EXPECT_TRUE(watch.connected()) << "release() hands the slot's lifetime to the caller";
    watch.disconnect();
}

TEST(CallbackStyle, DistributedLockOnLost) {
    redcoord::connection_pool pool(nowhere());
    redcoord::distributed_lock l(pool, "api-style");
    expect_scoped([&] { return l.on_lost([](const std::string&) {}); });
}

TEST(CallbackStyle, RedlockOnLost) {
    redcoord::connection_pool a(nowhere(1)), b(nowhere(2)), c(nowhere(3));
    redcoord::redlock l({&a, &b, &c}, "api-style");
    expect_scoped([&] { return l.on_lost([](const std::string&) {}); });
}

TEST(CallbackStyle, LeaderElectorEvents) {
    redcoord::connection_pool pool(nowhere());
    redcoord::leader_elector e(pool, "api-style");
    expect_scoped([&] { return e.on_elected([](std::uint64_t) {}); });
    expect_scoped([&] { return e.on_revoked([](redcoord::revoke_reason) {}); });
    expect_scoped([&] { return e.on_leader_changed([](std::optional<std::string>) {}); });
}

TEST(CallbackStyle, SentinelResolverOnMasterChanged) {
    redcoord::sentinel_resolver r(
        redcoord::parse_endpoint("redis-sentinel://127.0.0.1:1/api-style"));
    expect_scoped([&] { return r.on_master_changed([](const host_port&, const host_port&) {}); });
}

}  // namespace
