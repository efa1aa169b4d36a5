#pragma once
/// @file
/// The process's shared machinery behind every primitive: pub/sub links, the timer service,
/// the callback executor and connection pools, one of each per endpoint or per process instead
/// of one per object (as etcd's Session is shared by its mutexes and elections, and as
/// Redisson shares one pub/sub connection among its locks).

#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/core/log.hpp>
#include <redcoord/core/metrics.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/core/runtime_clock.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace boost::asio {
class io_context;
}

REDCOORD_API_BEGIN
namespace redcoord {

class sentinel_resolver;

namespace detail {
class timer_service;
class io_loop;
class async_link;
class serial_executor;
class strand;
class pubsub_mux;
class link_reactor;
/// A key that is equal for two endpoints exactly when every field that shapes their
/// connections is equal (address, credentials, db, timeouts, Sentinel settings).
[[nodiscard]] std::string endpoint_key(const endpoint& ep);
}  // namespace detail

/// Counts of what a runtime runs, a snapshot.
struct runtime_stats {
    std::size_t pubsub_links = 0;  ///< Endpoints with a live shared pub/sub link.
    std::size_t pubsub_interests =
        0;                  ///< Channels and patterns with at least one listener, over all links.
    std::size_t pools = 0;  ///< Live pools created through pool().
    std::uint64_t timer_ticks = 0;  ///< Timed ticks run so far (watchdogs, rounds, heartbeats).
    std::size_t tick_workers = 0;   ///< Tick workers alive now (more than one while ticks block).
};

/// The shared threads and links of a process's primitives.
///
/// A runtime owns:
/// - one pub/sub link per endpoint, multiplexed: every lock waiter, elector, signal hub and
///   barrier on that endpoint listens through it, with per-channel reference counts, and it
///   resubscribes everything after a reconnect;
/// - a timer service for watchdogs, loss deadlines, election rounds, queue heartbeats and
///   recovery, and held-back releases: one timer thread keeps the due times and never runs a
///   tick; the ticks run on tick workers, one lane per timer. A tick that blocks on a stalled
///   server (bounded by its commands' timeouts) holds up only its own timer: once a due tick
///   has waited 10 ms behind busy workers another worker joins in (at most 32; an extra one
///   ends after 2 s without work), so a stalled server of one object never costs a healthy
///   lock its watchdog. Ticks run no user code: loss notices and other callbacks go to the
///   callback executor, and log records and metric updates made there are queued to it too, so
///   a slow `on_lost` slot, log sink or metrics backend never delays a watchdog;
/// - a callback executor on which user callbacks (`on_lost`, `on_elected`, `on_revoked`, hub
///   slots) and the ticks' log records and metric updates run, in order per object
///   (a strand per object). It starts with one thread; when a ready callback has waited
///   10 ms behind callbacks of other objects that are still running, one more thread joins
///   in (at most 16; an extra thread ends after 2 s without work). So one object's slow
///   callback delays only that object's later callbacks (others by about 10 ms), while quick
///   callbacks keep one thread (a thread per callback object would cost a thread per lock);
/// - the pub/sub reader thread of its subscribers (the links above, and the Sentinel
///   notification links): one thread reads every link, starting with the first subscriber and
///   stopping with the last; the links' (re)connects run as timer ticks on the tick workers;
/// - one Sentinel resolver per Sentinel service its pools and subscribers use (sentinel());
/// - a registry of connection pools per endpoint (pool()).
///
/// Two runtimes share no thread, link, pool or resolver: what one runtime's stalled server or
/// slow callback holds up never reaches the other.
///
/// Every pool belongs to a runtime (connection_pool's constructor takes one; by default the
/// process's shared() runtime), and each primitive uses the runtime of the pool it is given.
/// So a process normally has one runtime and a few threads, however many locks, elections,
/// queues and barriers it creates. A separate runtime is useful to isolate a component (its
/// ticks then never wait for a tick worker behind more than 32 blocked ticks of others) or
/// in tests.
///
/// Lifetime: pools and primitives hold the runtime by std::shared_ptr, so it lives until the
/// last of them is gone; its threads stop then (never from a callback's own thread: a
/// runtime released there finishes its teardown when the thread returns).
///
/// @par Thread safety
/// Every member function may be called from any thread.
///
/// @par Errors
/// Starting a runtime thread can throw std::system_error; stats() and the destructor never throw.
///
/// @par Cost
/// Sends nothing itself: its threads run what the primitives schedule (each primitive's Cost
/// paragraph says what), and its pub/sub links cost one connection per endpoint and per known
/// replica, shared by the whole process.
class runtime : public std::enable_shared_from_this<runtime> {
public:
    /// A new, independent runtime; its threads start when first needed.
    [[nodiscard]] static std::shared_ptr<runtime> create();
    /// A new runtime whose event loop is the caller's `io`: the asynchronous operations of
    /// its primitives (async_acquire and the like) run on it and no I/O thread is started for
    /// them, so redcoord lives inside an Asio service. The caller runs `io` and keeps it alive
    /// while the runtime lives; handlers of one link run on a strand of it, so `io` may be
    /// run by several threads. The timer service and callback executor are the runtime's own.
    [[nodiscard]] static std::shared_ptr<runtime> create(boost::asio::io_context& io);
    /// The process's default runtime, created on first use; connection pools constructed
    /// without a runtime use it.
    [[nodiscard]] static std::shared_ptr<runtime> shared();

    ~runtime();
    runtime(const runtime&) = delete;
    runtime& operator=(const runtime&) = delete;

    /// The pool of this runtime for `ep`: the same pool for equal endpoints while any user
    /// still holds it, else a new one with `opts` (`opts` of a later call for a live pool are
    /// ignored).
    /// @throws invalid_argument as connection_pool's constructor.
    [[nodiscard]] std::shared_ptr<connection_pool> pool(const endpoint& ep, pool_options opts = {});

    /// Counts of links, listeners, pools and ticks.
    [[nodiscard]] runtime_stats stats() const;

    /// The clock of this runtime's timers and of its objects' lease, validity and term math
    /// (the steady clock unless a test advanced it; runtime_clock says what it moves and what
    /// not). A test calls `rt->clock().advance(d)` to make the watchdogs, heartbeats, election
    /// rounds and lease ends of this runtime's objects come due without sleeping; other
    /// runtimes' clocks do not move. Thread-safe.
    [[nodiscard]] runtime_clock& clock() const noexcept;

    /// Installs the metrics backend of this runtime's primitives (null: off, the default),
    /// with its label options. Objects resolve their series when they are constructed, so
    /// install it before creating the pools and primitives it should count; objects created
    /// earlier keep their earlier backend (or none). Pools created by pool() are included.
    void set_metrics(std::shared_ptr<metrics_backend> m, metrics_options opts = {});
    /// The installed metrics backend, or null.
    [[nodiscard]] std::shared_ptr<metrics_backend> metrics() const;
    /// The label options given with set_metrics().
    [[nodiscard]] metrics_options metrics_settings() const;

    /// Installs the sink of this runtime's log records (null: nothing is logged, the
    /// default). Takes effect for records emitted after the call, by every object.
    void set_log_sink(std::shared_ptr<log_sink> s);
    /// The installed log sink, or null.
    [[nodiscard]] std::shared_ptr<log_sink> log() const;
    /// Sends one record to the installed sink, if any; never throws (a throwing sink is
    /// ignored). Used by redcoord's parts; cheap when no sink is installed (one atomic load).
    /// On a tick worker the record is copied and the sink called on the callback executor
    /// (in order among those records), so a slow sink never delays a tick.
    void emit(log_level level, std::string_view component, std::string_view message,
              std::initializer_list<log_field> fields = {}) const noexcept;

    /// @name Internal services (used by redcoord's primitives; not a stable API)
    /// @{

    /// The shared pub/sub link to `ep` while anyone holds it, else a new one.
    [[nodiscard]] std::shared_ptr<detail::pubsub_mux> pubsub(const endpoint& ep);
    /// The timer service (its timer thread and tick workers).
    [[nodiscard]] detail::timer_service& timers() noexcept { return *timers_; }
    /// The callback executor.
    [[nodiscard]] detail::serial_executor& callbacks() noexcept { return *callbacks_; }
    /// The event loop of the asynchronous operations: the caller's io_context (create(io)) or
    /// the runtime's own, whose I/O thread starts on the first call.
    [[nodiscard]] boost::asio::io_context& io();
    /// True when io() is the caller's (create(io)), false when it is the runtime's own.
    [[nodiscard]] bool io_is_callers() const noexcept;
    /// The shared pipelined link to `ep` on io() while anyone holds it, else a new one.
    /// @throws invalid_argument for a Cluster endpoint; tls_error for TLS files that cannot be
    ///         loaded (async_link.hpp). A Sentinel endpoint's link uses sentinel(service).
    [[nodiscard]] std::shared_ptr<detail::async_link> link(const endpoint& ep);
    /// The pub/sub reader of this runtime's subscribers while any subscriber holds it, else a
    /// new one: its thread starts here and stops with the last subscriber (the dials run on
    /// timers()). @throws std::system_error when a thread cannot be started.
    [[nodiscard]] std::shared_ptr<detail::link_reactor> reactor();
    /// The Sentinel resolver that this runtime's pools and subscribers of `service` share
    /// while anyone holds it, else a new one on this runtime (default sentinel_options).
    /// @throws invalid_argument as sentinel_resolver's constructor.
    [[nodiscard]] std::shared_ptr<sentinel_resolver> sentinel(const endpoint& service);
    /// @}

private:
    explicit runtime(boost::asio::io_context* io = nullptr);
    mutable std::mutex mu_;
    std::map<std::string, std::weak_ptr<connection_pool>> pools_;
    std::map<std::string, std::weak_ptr<detail::pubsub_mux>> links_;
    std::unique_ptr<detail::serial_executor> callbacks_;
    // The ticks' log records and metric updates, queued off the tick workers (outlives timers_).
    std::unique_ptr<detail::strand> observers_;
    std::unique_ptr<detail::timer_service> timers_;
    std::unique_ptr<detail::io_loop> io_;  // after timers_: destroyed first
    std::map<std::string, std::weak_ptr<detail::async_link>> async_links_;  // guarded by mu_
    // Apart from mu_: a resolver's constructor makes pools on this runtime.
    std::mutex topology_mu_;
    std::weak_ptr<detail::link_reactor> reactor_;                        // topology_mu_
    std::map<std::string, std::weak_ptr<sentinel_resolver>> resolvers_;  // topology_mu_
    // Not under mu_: pool() and pubsub() construct objects under mu_, and those read these.
    mutable std::mutex obs_mu_;
    std::shared_ptr<metrics_backend> metrics_;  // guarded by obs_mu_
    metrics_options metrics_opts_;              // guarded by obs_mu_
    std::atomic<bool> has_sink_{false};         // the emit() fast path
    std::shared_ptr<log_sink> sink_;            // guarded by obs_mu_
};

}  // namespace redcoord

REDCOORD_API_END
