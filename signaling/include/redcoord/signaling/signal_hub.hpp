#pragma once
/// @file
/// Signal/wait over Redis pub/sub with master+replica redundancy (docs/signaling.md, signal/wait;
/// https://redis.io/docs/manual/pubsub/).

#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/core/subscriber.hpp>

#include <boost/signals2/connection.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord {

namespace detail {
struct hub_core;
struct hub_access;
struct waiter_access;
struct waiter_state;
}  // namespace detail

/// One received signal. Refer to it as `redcoord::signal`: the C library's function of the
/// same name hides an unqualified use after `using namespace redcoord`.
struct signal {
    /// The channel the signal was sent to. For unicast signals this is the channel given to
    /// unicast()/listen_unicast(), not the internal per-waiter channel.
    std::string channel;
    /// The payload, binary-safe (envelope removed).
    std::string payload;
    /// For pattern waits and on_pattern() slots: the pattern that matched; else empty.
    std::string pattern;
    /// True when the message carried no redcoord envelope (a plain PUBLISH from another
    /// client). Plain messages cannot be deduplicated: one copy arrives per link.
    bool plain = false;
};

/// Options of a signal_hub.
struct signal_options {
    /// Key/channel prefix for the hub's internal channels (unicast) and for barrier, latch and
    /// double_barrier keys. Broadcast channels are used verbatim so that plain clients can
    /// publish to them.
    std::string prefix{default_prefix};
    /// Reconnection timing and reading policy of the hub's pub/sub links. Left at its
    /// defaults, the hub listens through its runtime's shared links (one per endpoint for the
    /// whole process, shared with every hub, lock waiter and elector of that runtime). Any
    /// other value gives this hub private links with these settings (still read by the
    /// process's shared pub/sub reader, but one more connection per endpoint): for a hub that
    /// must reconnect on its own schedule, or read on demand
    /// (detail::subscriber_tuning::drain_interval: a waiter raises the master link's demand
    /// only while it blocks, and the first on()/on_pattern() keeps it watched).
    subscriber_options link{};
    /// How long listen()/wait*()/on*() wait, in milliseconds, for a link to confirm a new
    /// subscription (the master link; a replica link while the master link is down) before
    /// throwing connection_error. Must be > 0.
    std::chrono::milliseconds subscribe_timeout{3000};
    /// How many recent deliveries (envelope id + channel + pattern) are remembered exactly
    /// to drop the second copy of a signal (master + replica). Must be >= 1. Beyond it, a
    /// per-publisher high-water mark drops late copies too (a replica's resync replay), see
    /// detail::dedup_window; the cost is that a signal overtaken by more than this many
    /// later signals of the same publishing hub would be taken for a replay and dropped.
    std::size_t dedup_window = 16384;
    /// A waiter with an empty queue first reads the master link's socket itself for up to
    /// this long (microseconds; detail::subscriber_access::help_read, when the shared reader
    /// is not reading it at that moment) before it sleeps on a condition variable: the signal
    /// usually lands within a few microseconds of the publisher's reply, and the hand-off from
    /// the reader thread costs more than that. Zero: one look, no spinning.
    std::chrono::microseconds spin{50};
    /// The largest payload broadcast(), unicast() and envelope() accept, in bytes (the
    /// payload itself, without the 20-byte envelope). Larger ones throw payload_too_large
    /// before anything is sent. Why: the server queues each pub/sub message whole in every
    /// subscriber's output buffer, and its `client-output-buffer-limit pubsub` (32mb hard,
    /// 8mb soft for 60 s by default) disconnects a subscriber over it. PUBLISH still counts
    /// that subscriber as a receiver, so the signal is reported sent and silently lost. The
    /// default is the stock soft limit (8 MiB); raise it only with the servers' limit (and
    /// mind that each waiting process then buffers that much per signal). For bulk data use a
    /// queue (reliable_queue), or write it to a key and signal the key's name. Must be in
    /// 1..(512 MiB - 20) (Redis's largest bulk argument minus the envelope).
    std::size_t max_payload = std::size_t{8} << 20;
    /// Called on the runtime's callback thread when a slot throws (after the error counter is bumped);
    /// may be empty. Exceptions escaping it are swallowed.
    std::function<void(const signal&, std::exception_ptr)> on_slot_error;
};

/// Counters of a hub, a snapshot.
struct signal_hub_stats {
    std::uint64_t received = 0;     ///< Messages read from all links (both copies counted).
    std::uint64_t duplicates = 0;   ///< Second copies dropped by id.
    std::uint64_t plain = 0;        ///< Messages without an envelope (each copy counted).
    std::uint64_t slot_errors = 0;  ///< Slots that threw.
};

/// A standing subscription that queues the signals it receives.
///
/// Made by signal_hub::listen(), listen_pattern() or listen_unicast(); the subscription is
/// confirmed by the master link (or, while the master link is down, by a replica link) when
/// the waiter is returned, so every signal published after that (and delivered by any link)
/// is queued. Destroying the waiter unsubscribes (when it was the last user of the channel in
/// the process) and drops unread signals. The
/// waiter may outlive its hub: it then returns nullopt at once. The queue is unbounded: a
/// waiter nobody reads keeps every signal of its channels (memory grows with the signal rate
/// times the time it is not read; destroy waiters you no longer read).
///
/// @par Thread safety
/// One waiter may be used from several threads; each signal is returned once.
///
/// @par Errors
/// The waits throw nothing for a timeout (they return nullopt); moves and the destructor never
/// throw.
///
/// @par Cost
/// No connection or thread of its own: its channels are subscribed on the runtime's shared links
/// (one SUBSCRIBE per channel and link for the whole process); a wait reads the links on the
/// calling thread.
class waiter {
public:
    /// Takes over the other waiter's subscription and queued signals; the other is left empty.
    waiter(waiter&&) noexcept;
    /// Unsubscribes this waiter (as its destructor) and takes over the other's subscription.
    waiter& operator=(waiter&&) noexcept;
    waiter(const waiter&) = delete;
    waiter& operator=(const waiter&) = delete;
    /// Unsubscribes; never throws.
    ~waiter();

    /// The oldest queued signal, without waiting; nullopt when none is queued.
    [[nodiscard]] std::optional<signal> try_wait();
    /// Waits up to `timeout` (milliseconds; zero does not wait; milliseconds::max(), or
    /// anything beyond ten years, waits without a deadline) for a signal; nullopt on timeout
    /// or after the hub was destroyed. Before sleeping it reads signals already in
    /// the master link's socket on the calling thread (see signal_options::spin); routing and
    /// dedup are the same whichever thread reads, and slots still run on the callback thread.
    [[nodiscard]] std::optional<signal> wait(std::chrono::milliseconds timeout);
    /// Signals queued and not yet returned, after reading what the master link's socket
    /// already holds (as try_wait() does).
    [[nodiscard]] std::size_t pending() const;
    /// The waiter id (16 hex characters), which names a unicast waiter's private channel.
    [[nodiscard]] const std::string& id() const noexcept;

private:
    friend class signal_hub;
    friend struct detail::waiter_access;  // the asynchronous waits (async.hpp)
    waiter(std::shared_ptr<detail::hub_core> core, std::shared_ptr<detail::waiter_state> st);
    std::shared_ptr<detail::hub_core> core_;
    std::shared_ptr<detail::waiter_state> state_;
};

/// Broadcast and unicast signals, blocking waits and callback subscriptions over one Redis
/// master and any number of its replicas (docs/signaling.md, signal/wait).
///
/// Every subscription is made on the master's pub/sub link AND on a link to each of its
/// replicas: the runtime's links (runtime::pubsub(); they reconnect and resubscribe by
/// themselves), shared with every other hub, lock waiter and elector of the process, so a hub
/// owns no thread and no connection. Two hubs of one process listening to one channel share
/// one SUBSCRIBE per link. The replicas are those the runtime discovers for the master
/// (ROLE, or the sentinels), plus the ones given to the hub. Redis forwards
/// PUBLISH to replicas, so each signal normally arrives twice; signals published through a
/// hub carry an envelope with a unique id (envelope.hpp) and every waiter and slot sees each
/// exactly once (a bounded window of recent deliveries plus a per-publisher high-water mark
/// for copies older than the window, such as a replica's resync replay: signal_options::
/// dedup_window, detail::dedup_window). When the
/// master link drops, signals keep arriving over a replica while the link reconnects and
/// resubscribes; when a replica dies, the master link carries on.
///
/// A plain PUBLISH from another client (no envelope) still wakes waiters and runs slots, but
/// it cannot be told apart from a second, identical plain PUBLISH, so it is delivered once
/// per link that received it (twice with one healthy replica); signal::plain marks it.
///
/// Order: signals arrive in publish order over any one link. When a link drops and the other
/// fills in, a signal that only the surviving link carried may be delivered after a later
/// one the reconnected link carried first (never twice, never lost while one link is up).
///
/// Unicast picks among the waiter channels subscribed *on the master*: a unicast waiter whose
/// master link is reconnecting is not a candidate (its replica link alone is not listed).
///
/// **Unicast delivery is socket-level, not consumption.** unicast() returning true means the
/// master handed the payload to one subscribed pub/sub connection; it does NOT mean a waiter
/// consumed it. The payload is still lost when the chosen waiter times out or is destroyed
/// while its UNSUBSCRIBE is in flight, or when the chosen waiter's host died and TCP has not
/// noticed yet (Redis keeps such a subscription until tcp-keepalive, 300 s by default, or a
/// write error). Use unicast to wake one of N, not to hand off work that must be done: for
/// that use a list (reliable_queue). Cost: the script runs `PUBSUB CHANNELS <pattern>`, which
/// scans every channel on the master (O(all channels)) while Redis is blocked.
///
/// Redis Cluster (`redis-cluster://`, Redis 7.0): signals travel by sharded pub/sub. A
/// channel is subscribed (SSUBSCRIBE) on the master of its hash slot and on each of that
/// master's replicas, broadcast() publishes with SPUBLISH on the master (its count: the
/// hubs subscribed there), and a replica's copy is dropped by the envelope id as above. When
/// the slot's master dies, the promoted replica keeps delivering; when the slot migrates,
/// the hub subscribes on the new owner by itself. unicast() runs `PUBSUB SHARDCHANNELS` and
/// SPUBLISH on the shard that serves the channel's waiters (their names share the hash tag
/// `{channel}`). Sharded pub/sub has no patterns: listen_pattern(), wait_pattern() and
/// on_pattern() throw invalid_argument, and replicas given to the constructor or
/// add_replica() do too (each shard's come from the slot map). Source: redis.io, "Sharded
/// Pub/Sub".
///
/// Memory: slots that run slower than their signals arrive queue the backlog on the callback
/// thread without bound (as an unread waiter does); keep slots short or hand work off.
///
/// Pub/sub is fire-and-forget: a signal published before a subscription is confirmed, or
/// while every link is down, is never seen. Anything that must not miss an event keeps it in
/// a key and uses signals only to wake (barrier, latch, double_barrier).
///
/// Channels: broadcast channels are the Redis channel names, verbatim (validated with
/// `validate_name`: non-empty, <= 1024 bytes, no CR/LF/NUL; glob characters are literal).
/// Unicast channel `c` maps to the per-waiter channels `<prefix>unicast:{c}:<waiter id>`.
///
/// Threads and order of callbacks: slots run on the runtime's callback executor (shared with
/// other primitives' callbacks), each hub's slots one at a time, in arrival order (a strand
/// per hub); a slow slot delays this hub's later slots, and other objects' callbacks only by
/// the moment the executor takes to add a thread (about 10 ms; see runtime).
///
/// @par Thread safety
/// Every member function may be called from any thread. A slot must not destroy
/// the hub. The hub must outlive the pool it was given.
///
/// @par Errors
/// The constructor throws invalid_argument for bad options; broadcast() and unicast() throw
/// invalid_argument for a bad channel, payload_too_large (before anything is sent) for a payload
/// over signal_options::max_payload, and connection_error, timeout_error, pool_exhausted or
/// reply_error from the master; listen() and the waits throw invalid_argument for
/// bad channels and timeout_error when the master does not confirm a subscription in time; a
/// timed-out wait returns nullopt; slots' exceptions are swallowed.
///
/// @par Cost
/// broadcast(): one PUBLISH round trip; unicast(): one EVALSHA round trip, whose script runs PUBSUB
/// CHANNELS (O(all channels on the master)) and one PUBLISH; waits and slots: subscriptions on the
/// runtime's shared links to the master and each replica (one SUBSCRIBE per channel and link,
/// process-wide).
class signal_hub {
public:
    /// A callback for on()/on_pattern().
    using slot_type = std::function<void(const signal&)>;

    /// Listens through the runtime's pub/sub link to the pool's master
    /// (`master.runtime()->pubsub(master.where())`) and its links to the master's replicas.
    /// Starts the master link when the runtime has none yet (it connects in the background).
    ///
    /// With a Sentinel pool (`master.where().is_sentinel()`) the master link is given the
    /// Sentinel endpoint itself, so it follows the master the sentinels name across
    /// failovers (core subscriber, sentinel.hpp), and the replica links follow the replicas
    /// the sentinels report (refreshed periodically and after a reconnect of the master
    /// link). After a failover the master link and the promoted replica's link are on the
    /// same server: enveloped signals are still delivered once, plain ones once per link.
    /// @param master the master's pool, used for PUBLISH and scripts; must outlive the hub.
    /// @param replicas replicas of that master to listen on besides those discovered (may
    ///        be empty); kept for the life of the runtime's link.
    /// @param opts key prefix, payload limit and de-duplication window (signal_options).
    /// @throws invalid_argument for bad options.
    signal_hub(connection_pool& master, std::vector<endpoint> replicas = {},
               signal_options opts = {});
    /// Drops the hub's subscriptions (the runtime's links stay for their other users) and its
    /// pending slot runs, waiting for a running one; pending waits return nullopt. Never throws.
    ~signal_hub();
    signal_hub(const signal_hub&) = delete;
    signal_hub& operator=(const signal_hub&) = delete;

    /// Adds a replica link (for example one the runtime does not discover) to the master's links,
    /// for every user of them, and subscribes it to everything currently subscribed. Does not
    /// wait for it to connect.
    void add_replica(const endpoint& replica);

    /// Publishes `payload` (any bytes, at most signal_options::max_payload, 8 MiB by default)
    /// to `channel` on the master.
    /// @return how many pub/sub connections on the master received it (a process whose hubs
    ///         listen through one runtime counts once, however many of its hubs listen).
    /// @throws invalid_argument for a bad channel; payload_too_large for a payload over
    ///         signal_options::max_payload, before anything is sent (a larger message would
    ///         make the server drop its subscribers, see there); errors of
    ///         connection_pool::command.
    std::size_t broadcast(std::string_view channel, std::string_view payload);

    /// Sends `payload` to one unicast waiter of `channel`, chosen uniformly at random on the
    /// master by a Lua script (docs/signaling.md, unicast): it lists `PUBSUB CHANNELS` matching the glob-escaped
    /// per-waiter prefix, keeps the names of exactly waiter-channel length, and publishes to
    /// the one at a random index passed in ARGV.
    /// @return true when one waiter's pub/sub *connection* received it, which is not proof that
    /// the waiter consumed it (see the class notes: a waiter timing out at that moment, or a
    /// dead host TCP has not noticed, loses it); false when no unicast waiter listens on the
    /// master.
    /// @throws as broadcast().
    bool unicast(std::string_view channel, std::string_view payload);

    /// Subscribes to `channels` (non-empty; duplicates ignored) and returns the waiter once the
    /// master link confirmed them (a replica link while the master link is down).
    /// @throws invalid_argument for an empty list or a bad name;
    /// @throws connection_error when no link confirms within subscribe_timeout.
    [[nodiscard]] waiter listen(const std::vector<std::string>& channels);
    /// Same with glob patterns (PSUBSCRIBE); the pattern is used as given.
    [[nodiscard]] waiter listen_pattern(const std::vector<std::string>& patterns);
    /// A unicast waiter of `channel`: subscribes to its own channel `<prefix>unicast:{channel}:<id>`.
    /// Returns once the *master* link confirmed it, so a unicast() issued afterwards counts
    /// it as a candidate; a replica's confirmation is accepted only while the master link is
    /// down (the waiter then becomes a candidate when the master link is back).
    /// @throws invalid_argument for a bad channel; connection_error when no usable link
    ///         confirms within subscribe_timeout.
    [[nodiscard]] waiter listen_unicast(std::string_view channel);

    /// Subscribes to `channel` and waits up to `timeout` (milliseconds, counted from the
    /// confirmed subscription) for one signal. nullopt on timeout.
    /// @throws as listen().
    [[nodiscard]] std::optional<signal> wait(std::string_view channel,
                                             std::chrono::milliseconds timeout);
    /// wait() with a zero timeout: a signal can only be returned if it arrives while the
    /// subscription is being confirmed. For a real non-blocking poll keep a waiter from
    /// listen() and call waiter::try_wait().
    [[nodiscard]] std::optional<signal> try_wait(std::string_view channel);
    /// Waits for the first signal on any of `channels`; signal::channel says which.
    [[nodiscard]] std::optional<signal> wait_any(const std::vector<std::string>& channels,
                                                 std::chrono::milliseconds timeout);
    /// Waits until every channel in `channels` has had a signal; returns one signal per
    /// distinct channel, in the order of `channels` (the first to arrive on each), or nullopt
    /// when `timeout` (milliseconds; milliseconds::max() waits without a deadline) passes first.
    [[nodiscard]] std::optional<std::vector<signal>> wait_all(
        const std::vector<std::string>& channels, std::chrono::milliseconds timeout);
    /// Waits for a signal on any channel matching the glob `pattern` (PSUBSCRIBE).
    [[nodiscard]] std::optional<signal> wait_pattern(std::string_view pattern,
                                                     std::chrono::milliseconds timeout);
    /// Waits as a fresh unicast waiter of `channel`.
    [[nodiscard]] std::optional<signal> wait_unicast(std::string_view channel,
                                                     std::chrono::milliseconds timeout);

    /// Runs `slot` on the runtime's callback thread for every signal on `channel` until the returned
    /// connection is disconnected or destroyed (then unsubscribes if nobody else listens).
    /// A slot that throws is counted (stats().slot_errors) and reported through
    /// signal_options::on_slot_error; later signals and other slots still run.
    /// @throws as listen(); usage_error when the hub has been shut down (its runtime is being
    ///         destroyed).
    [[nodiscard]] boost::signals2::scoped_connection on(std::string_view channel, slot_type slot);
    /// Same for channels matching the glob `pattern`.
    [[nodiscard]] boost::signals2::scoped_connection on_pattern(std::string_view pattern,
                                                                slot_type slot);

    /// `payload` wrapped in a fresh envelope of this hub (for scripts that PUBLISH on the
    /// hub's behalf, so receivers deduplicate their copies). One envelope may be published to
    /// several channels: each channel's delivery is kept (deduplication is per channel).
    /// @throws payload_too_large for a payload over signal_options::max_payload (a script
    ///         publishing it would lose it as broadcast() would).
    [[nodiscard]] std::string envelope(std::string_view payload);
    /// The master's pool (barrier, latch and double_barrier run their scripts on it).
    [[nodiscard]] connection_pool& master() noexcept;
    /// The options the hub was made with.
    [[nodiscard]] const signal_options& options() const noexcept;
    /// Counters, a snapshot.
    [[nodiscard]] signal_hub_stats stats() const;
    /// How many links (master + replicas) are up with every subscription confirmed (the
    /// links are the runtime's: other users' subscriptions count too).
    [[nodiscard]] std::size_t connected_links() const;
    /// The per-waiter channel prefix of unicast channel `channel`: `<prefix>unicast:{channel}:`.
    [[nodiscard]] std::string unicast_prefix(std::string_view channel) const;

private:
    friend struct detail::hub_access;  // barrier keeps its channel subscribed without a waiter
    std::shared_ptr<detail::hub_core> core_;
};

}  // namespace redcoord

REDCOORD_API_END
