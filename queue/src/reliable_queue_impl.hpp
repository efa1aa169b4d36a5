#pragma once
// The reliable_queue's driver state, shared by the blocking calls (reliable_queue.cpp) and the
// asynchronous pop (async_pop.cpp).

#include <redcoord/core/detail/observe.hpp>
#include <redcoord/core/detail/release_waiter.hpp>
#include <redcoord/core/detail/thread_annotations.hpp>
#include <redcoord/core/detail/timer_service.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/queue/reliable_queue.hpp>

#include "consumer_lease.hpp"
#include "pop_recheck.hpp"

#include <array>
#include <atomic>
#include <mutex>

namespace redcoord {

using clock_type = std::chrono::steady_clock;
using lease_ref = detail::consumer_lease::ref;

// The driver: keys, scripts and connections around the consumer lease engine, which makes
// every lease decision (detail::consumer_lease). `mu` serialises the engine; no I/O happens
// while it is held.
struct reliable_queue::impl {
    connection_pool& pool;
    reliable_queue_options opts;
    std::string name;
    std::string ready_key, dead_key, consumers_key;
    std::string processing_prefix, heartbeat_prefix;
    std::string ttl_ms, max_attempts;
    // Where push() announces new messages to pending async_pops (the ready key + ":pushed").
    std::string push_channel;

    // Message ids: 8 random bytes fixed per queue object, then a counter.
    std::array<std::uint8_t, 8> id_prefix{};
    std::atomic<std::uint64_t> id_counter{0};

    mutable detail::mutex mu;
    // Every lease decision; reached only through locked().
    detail::consumer_lease lease REDCOORD_GUARDED_BY(mu);

    // Held so the runtime outlives the upkeep timer (declared before it).
    std::shared_ptr<redcoord::runtime> rt;
    // The time of the lease engine's decisions: the runtime's clock (runtime_clock). Its
    // deadlines meet steady waits only through rt->clock().to_steady().
    [[nodiscard]] clock_type::time_point now() const { return rt->clock().now(); }
    std::mutex start_mu;  // serialises start_consumer() and close(); guards upkeep
    std::atomic<bool> started{false};
    // Heartbeats and periodic recovery, on the runtime's shared timer thread while the
    // consumer is started (no thread of its own).
    std::unique_ptr<detail::timer> upkeep;
    // The push notices of push_channel, for the async pops of this object: one listener on
    // the runtime's shared pub/sub link, made on the first async_pop (under start_mu).
    std::unique_ptr<detail::release_waiter> pushes;
    detail::release_waiter& push_notices();
    // The re-check the async pops that wait for those notices share, made with the first
    // (under start_mu); it lives on while one of its checks does.
    std::shared_ptr<detail::pop_recheck> rechecks;
    std::shared_ptr<detail::pop_recheck> pop_rechecks();

    std::atomic<std::uint64_t> hb_failures{0}, settle_retries{0}, lease_losses{0};

    // Metrics (empty when off): counters moved by this object's replies; the ready, dead and
    // in-flight gauges sampled at each scrape (one script, as stats()). Declared last: the
    // sampling stops before anything it reads goes away.
    detail::counter_handle redeliveries, dead_letters;
    detail::sampled_gauges gauges;

    impl(connection_pool& p, std::string_view n, reliable_queue_options o);

    std::string processing_key(const std::string& id) const { return processing_prefix + id; }
    std::string heartbeat_key(const std::string& id) const { return heartbeat_prefix + id; }

    // Runs f(lease) with mu held. No I/O happens inside.
    template <class F>
    auto locked(F&& f) REDCOORD_EXCLUDES(mu) {
        detail::lock_guard lk(mu);
        return f(lease);
    }
    template <class F>
    auto locked(F&& f) const REDCOORD_EXCLUDES(mu) {
        detail::lock_guard lk(mu);
        return f(lease);
    }

    void start_consumer();
    std::optional<clock_type::time_point> upkeep_tick();
    void heartbeat(connection& c, lease_ref who, const std::string& id);
    void register_after_move(connection& c, lease_ref who, const std::string& id) noexcept;
    void release(connection& c, const std::string& id);
    std::optional<delivery> pop_as(detail::consumer_lease::pop_ticket& t,
                                   const std::stop_token& stop);
    template <class F>
    auto settling(const delivery& d, F&& f);
    recovery_result recover();
    void observe();
    // The delivery of `element`, moved into the processing list of consumer `id`.
    static delivery make_delivery(std::string element, const std::string& id);
};

}  // namespace redcoord
