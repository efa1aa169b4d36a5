// signal_hub, barrier and latch input checks that need no server: everything here is
// rejected before any I/O (the pool connects lazily; links retry in the background).
#include <redcoord/core/errors.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/signaling/barrier.hpp>
#include <redcoord/signaling/double_barrier.hpp>
#include <redcoord/signaling/envelope.hpp>
#include <redcoord/signaling/signal_hub.hpp>

#include <redcoord/signaling/latch.hpp>

#include <gtest/gtest.h>

#include <sys/mman.h>

using namespace std::chrono_literals;

namespace {

redcoord::endpoint nowhere() {
    redcoord::endpoint ep;
    ep.port = 1;  // nothing listens on port 1
    ep.connect_timeout = 100ms;
    return ep;
}

TEST(HubOffline, UnicastChannelsAreNamespacedByPrefixAndChannel) {
    redcoord::connection_pool pool(nowhere());
    redcoord::signal_options o;
    o.prefix = "app:";
    redcoord::signal_hub hub(pool, {}, o);
    EXPECT_EQ(hub.unicast_prefix("jobs"), "app:unicast:{jobs}:");
    EXPECT_EQ(hub.unicast_prefix("a*b"), "app:unicast:{a*b}:");
}

TEST(HubOffline, EnvelopesAreUniqueAndCarryThePayload) {
    redcoord::connection_pool pool(nowhere());
    redcoord::signal_hub hub(pool);
    const std::string payload("x\0y", 3);
    auto a = hub.envelope(payload), b = hub.envelope(payload);
    EXPECT_NE(a, b);
    auto ea = redcoord::detail::open_envelope(a);
    ASSERT_TRUE(ea);
    EXPECT_EQ(ea->payload, payload);
    EXPECT_EQ(a.size(), payload.size() + redcoord::detail::envelope_overhead);
}

TEST(HubOffline, BadNamesAndOptionsAreRejectedBeforeAnyIo) {
    redcoord::connection_pool pool(nowhere());
    redcoord::signal_hub hub(pool);
    EXPECT_THROW(hub.broadcast("", "x"), redcoord::invalid_argument);
    EXPECT_THROW(hub.broadcast(std::string("a\0b", 3), "x"), redcoord::invalid_argument);
    EXPECT_THROW(hub.broadcast("a\nb", "x"), redcoord::invalid_argument);
    EXPECT_THROW((void)hub.unicast("a\rb", "x"), redcoord::invalid_argument);
    EXPECT_THROW((void)hub.listen({}), redcoord::invalid_argument);
    EXPECT_THROW((void)hub.listen_pattern({""}), redcoord::invalid_argument);
    EXPECT_THROW((void)hub.listen_unicast(""), redcoord::invalid_argument);
    EXPECT_THROW((void)hub.wait_all({}, 10ms), redcoord::invalid_argument);
    EXPECT_THROW((void)hub.on_pattern("", [](const redcoord::signal&) {}),
                 redcoord::invalid_argument);
    redcoord::signal_options bad;
    bad.subscribe_timeout = 0ms;
    EXPECT_THROW(redcoord::signal_hub(pool, {}, bad), redcoord::invalid_argument);
    EXPECT_THROW(redcoord::barrier(hub, "b", 0), redcoord::invalid_argument);
    EXPECT_THROW(redcoord::barrier(hub, "", 1), redcoord::invalid_argument);
    EXPECT_THROW(redcoord::double_barrier(hub, "d", 0), redcoord::invalid_argument);
    EXPECT_THROW(redcoord::double_barrier(hub, "d", 2, {.arrival_lease = 10ms}),
                 redcoord::invalid_argument);
}

TEST(HubOffline, S7_LatchCountsBeyondTwoToThe53AreRejectedBeforeAnyIo) {
    // Lua numbers are doubles: a larger count would be stored rounded (and read back wrong).
    redcoord::connection_pool pool(nowhere());
    redcoord::signal_hub hub(pool);
    constexpr std::uint64_t too_big = (std::uint64_t{1} << 53) + 1;
    EXPECT_THROW(redcoord::latch(hub, "big", too_big), redcoord::invalid_argument);
    EXPECT_THROW(redcoord::latch(hub, "big", ~std::uint64_t{0}), redcoord::invalid_argument);
}

TEST(HubOffline, C8_OversizedPayloadsAndEmptyNamesAreTypedErrorsBeforeAnyIo) {
    redcoord::connection_pool pool(nowhere());
    redcoord::signal_hub hub(pool);
    // A real (reserved, never touched) range one byte over the documented maximum.
    const std::size_t size = (std::size_t{512} << 20) - redcoord::detail::envelope_overhead + 1;
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    const std::string_view huge(static_cast<const char*>(p), size);
    EXPECT_THROW(hub.broadcast("c", huge), redcoord::invalid_argument);
    EXPECT_THROW((void)hub.unicast("c", huge), redcoord::invalid_argument);
    EXPECT_THROW((void)hub.envelope(huge), redcoord::invalid_argument);
    ::munmap(p, size);
    EXPECT_THROW(redcoord::double_barrier(hub, "", 2), redcoord::invalid_argument);
    EXPECT_THROW(redcoord::latch(hub, "", 2), redcoord::invalid_argument);
    EXPECT_THROW(redcoord::latch(hub, "l", 1, {.recheck_interval = 0ms}),
                 redcoord::invalid_argument);
}

// Issue 33: a pub/sub message larger than the server's `client-output-buffer-limit pubsub`
// disconnects the subscriber, so a signal above signal_options::max_payload (8 MiB by default)
// is refused before any I/O: payload_too_large, never the unreachable server's connection_error.
TEST(HubOffline, SignalAboveMaxPayloadIsRefusedBeforeAnyIo) {
    redcoord::connection_pool pool(nowhere());
    redcoord::signal_hub hub(pool);
    const std::string over((std::size_t{8} << 20) + 1, 'x');
    EXPECT_THROW(hub.broadcast("c", over), redcoord::payload_too_large);
    EXPECT_THROW((void)hub.unicast("c", over), redcoord::payload_too_large);
    // An envelope is what a script PUBLISHes on the hub's behalf: the same limit.
    EXPECT_THROW((void)hub.envelope(over), redcoord::payload_too_large);
    EXPECT_NO_THROW((void)hub.envelope(std::string_view(over).substr(1)));
}

TEST(HubOffline, MaxPayloadOutsideItsRangeIsRejected) {
    redcoord::connection_pool pool(nowhere());
    redcoord::signal_options zero;
    zero.max_payload = 0;
    EXPECT_THROW(redcoord::signal_hub(pool, {}, zero), redcoord::invalid_argument);
    redcoord::signal_options beyond;
    beyond.max_payload = (std::size_t{512} << 20) - redcoord::detail::envelope_overhead + 1;
    EXPECT_THROW(redcoord::signal_hub(pool, {}, beyond), redcoord::invalid_argument);
    redcoord::signal_options largest;
    largest.max_payload = beyond.max_payload - 1;
    EXPECT_NO_THROW(redcoord::signal_hub(pool, {}, largest));
}

TEST(HubOffline, BarrierTimeoutMessageNamesTheCounts) {
    redcoord::barrier_timeout e("crew", 2, 5);
    EXPECT_EQ(e.arrived(), 2u);
    EXPECT_EQ(e.parties(), 5u);
    EXPECT_STREQ(e.what(), "barrier 'crew' timed out: 2 of 5 parties arrived");
    const redcoord::timeout_error& base = e;  // catchable as core's timeout_error
    EXPECT_NE(std::string(base.what()).find("2 of 5"), std::string::npos);
}

TEST(HubOffline, DestroyingAHubThatNeverConnectedDoesNotHang) {
    redcoord::connection_pool pool(nowhere());
    auto start = std::chrono::steady_clock::now();
    { redcoord::signal_hub hub(pool, {nowhere()}); }
    EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
}

}  // namespace
