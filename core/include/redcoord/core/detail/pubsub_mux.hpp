#pragma once
/// @file
/// The runtime's pub/sub multiplexer: one subscriber link per endpoint shared by every lock
/// waiter, elector, signal hub and barrier of the process (Redisson shares one pub/sub
/// connection among its locks the same way), plus one link per replica of that endpoint.
/// Internal to redcoord (reached through runtime::pubsub()); not a stable API.

#include <redcoord/core/cluster.hpp>
#include <redcoord/core/detail/observe.hpp>
#include <redcoord/core/detail/thread_annotations.hpp>
#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/core/subscriber.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord {
class runtime;
class connection_pool;
}  // namespace redcoord

namespace redcoord::detail {

class timer;

/// How a multiplexer follows the replicas of its endpoint.
struct pubsub_mux_options {
    /// Discover the endpoint's replicas (its ROLE reply, or the sentinels' replica list for a
    /// Sentinel endpoint) and listen on each of them too: a message published on the master
    /// is propagated to its replicas, so a listener still hears it while the master link is
    /// down or reconnecting (the "subscribe on master and replicas at once" redundancy).
    bool follow_replicas = true;
    /// How often the replica list is asked for again (also right after the first listener
    /// and after the master link reconnects). Must be > 0.
    std::chrono::milliseconds replica_refresh{10000};
    /// Connect and command timeout of one discovery (capped by the endpoint's own).
    std::chrono::milliseconds discovery_timeout{500};
    /// Reconnect and health settings of every link of this multiplexer (the runtime's shared
    /// multiplexers use the defaults).
    subscriber_options link;
};

/// Channel (and pattern) listeners over the subscriber links to one endpoint and its replicas.
///
/// A channel is subscribed when its first listener appears and unsubscribed when its last
/// one goes (reference counts per channel and per pattern), on the master link and on every
/// replica link. After a link reconnects, its subscriber resubscribes every channel and each
/// listener's `on_link(true)` runs, so a listener re-checks the state it waits on (messages
/// published while a link was down are lost on that link, as pub/sub always loses them).
/// `on_link(false)` runs when a link drops.
///
/// Duplicates: a message published on the master arrives once per link (master and each
/// replica). Listeners that act on each message de-duplicate (the signal hub does, by
/// envelope id); wake-ups (lock waiters, election hand-off) need not.
///
/// Redis Cluster (a `redis-cluster://` endpoint; Redis 7.0 sharded pub/sub): channels are
/// subscribed with SSUBSCRIBE on the master of their hash slot *and* on each of its replicas
/// at once (one group of links per shard, opened with the shard's first channel and closed
/// at the next refresh after its last one goes), and must be published with SPUBLISH. The
/// slot map comes from the runtime's pool of the endpoint. A channel whose slot moved (the
/// node drops it, or refuses it with MOVED) is re-homed on the new owner's group as soon
/// as the map says where, and its listeners' `on_link(true)` runs so they re-check. While a
/// group's master link is down (a failover), the map is asked for every 200 ms; its
/// replicas' links keep delivering meanwhile (the promoted replica keeps its subscribers).
/// Patterns are refused (sharded pub/sub has none), as are link() and add_replica() (each
/// shard has its own). Sources: redis.io "Sharded Pub/Sub", SSUBSCRIBE, SPUBLISH.
///
/// Replica discovery runs on a tick worker of the runtime's timer service, bounded by
/// `discovery_timeout`: never on a caller's thread, the callback executor or another timer's
/// lane.
///
/// Handlers run on the thread that reads the link (the process's pub/sub reader, or a
/// waiter that reads it itself, see subscriber); they must return quickly.
///
/// Thread-safety: every member function may be called from any thread.
class pubsub_mux : public std::enable_shared_from_this<pubsub_mux> {
public:
    /// What one listener is told.
    struct handlers {
        std::function<void(const pubsub_message&)> on_message;  ///< Each message on its channel.
        std::function<void(bool up)> on_link;  ///< A link (re)subscribed / dropped; may be empty.
    };

    class listener;

    /// A multiplexer that only reads `ep` (no replica discovery). Opens no connection yet:
    /// the link starts with the first listener.
    explicit pubsub_mux(endpoint ep);
    /// A multiplexer that follows `ep`'s replicas as `opts` says, discovering them on `rt`'s
    /// timer and callback threads. @throws invalid_argument for bad options.
    pubsub_mux(endpoint ep, std::shared_ptr<redcoord::runtime> rt, pubsub_mux_options opts = {});
    ~pubsub_mux();
    pubsub_mux(const pubsub_mux&) = delete;
    pubsub_mux& operator=(const pubsub_mux&) = delete;

    /// Adds a listener on `channel` (SUBSCRIBE sent when it is the channel's first), without
    /// waiting for the server's confirmation (see listener::wait_confirmed()). The mux must
    /// be owned by a std::shared_ptr (listeners keep it alive).
    /// @throws invalid_argument for an empty channel or a missing on_message.
    [[nodiscard]] listener listen(std::string channel, handlers h);
    /// The same for a glob pattern (PSUBSCRIBE).
    [[nodiscard]] listener listen_pattern(std::string pattern, handlers h);

    /// Listens on `replica` too, for as long as the mux lives (replicas given by hand are
    /// kept even when discovery does not report them). Same address as a link it has: no-op.
    void add_replica(const endpoint& replica);
    /// The replica links' endpoints, discovered and given.
    [[nodiscard]] std::vector<endpoint> replicas() const;
    /// Asks for the replica list again now (asynchronously; no-op without following).
    void refresh_replicas();

    /// True while the master link is up and every wanted channel is confirmed on it.
    [[nodiscard]] bool connected() const;
    /// How many links (master and replicas) are up with every wanted channel confirmed.
    [[nodiscard]] std::size_t connected_links() const;
    /// The endpoint of the master link.
    [[nodiscard]] const endpoint& where() const noexcept { return ep_; }
    /// True for a Redis Cluster endpoint (sharded pub/sub, one link group per shard).
    [[nodiscard]] bool clustered() const noexcept { return ep_.is_cluster(); }
    /// The master link itself, started on first use (drivers that read it themselves, tests).
    /// @throws invalid_argument on a cluster (each shard has its own: see link_of()).
    [[nodiscard]] subscriber& link();
    /// The link a waiter may read on its own thread and raise the demand for prompt delivery
    /// on (subscriber_access): the master link of one server, started now if it was not; null
    /// on a cluster, whose shard links the shared reader always watches, or when the link
    /// cannot be started (out of memory). Never throws.
    [[nodiscard]] subscriber* readable_link() noexcept;
    /// The master link that carries `channel`: link() for one server, the master link of the
    /// channel's shard on a cluster (null while no listener wants the channel or its shard
    /// is not known). Shared, so that a caller may read it while the channel is re-homed.
    [[nodiscard]] std::shared_ptr<subscriber> link_of(const std::string& channel);
    /// Number of channels and patterns with at least one listener.
    [[nodiscard]] std::size_t interests() const;

    struct entry;

private:
    friend class listener;
    struct replica_link {
        endpoint ep;
        bool given = false;  // by add_replica(): kept when discovery does not list it
        std::shared_ptr<subscriber> sub;
    };
    using up_flag = std::shared_ptr<std::atomic<bool>>;
    void dispatch(const pubsub_message& m);
    void link_state(bool up);
    void release(const std::shared_ptr<entry>& e) noexcept;
    listener add(bool pattern, std::string name, handlers h);
    subscriber& link_locked() REDCOORD_REQUIRES(mu_);
    // `up` (may be null) follows the link's state.
    std::unique_ptr<subscriber> make_link(const endpoint& ep, bool master, up_flag up,
                                          const subscriber_options& opts);
    void subscribe_all(subscriber& s) REDCOORD_REQUIRES(mu_);
    void discovered(const std::vector<endpoint>& found);
    void discover() noexcept;
    // The discovery timer's due time `after` from now, on the runtime's clock (its timers').
    [[nodiscard]] std::chrono::steady_clock::time_point discovery_due(
        std::chrono::milliseconds after) const;

    // Cluster mode (pubsub_mux_cluster.cpp).
    struct shard_group {
        up_flag master_up = std::make_shared<std::atomic<bool>>(false);
        std::shared_ptr<subscriber> master;
        std::map<std::string, std::shared_ptr<subscriber>> replicas;  // by host:port
        std::set<std::string> channels;
    };
    using retired_links = std::vector<std::shared_ptr<subscriber>>;
    // Homes `channel` on its shard's group per map_ (opening the group) and subscribes it
    // there; no-op while map_ is null or the slot is unserved.
    void home_locked(const std::string& channel) REDCOORD_REQUIRES(mu_);
    // Unsubscribes `channel` from its group (if homed).
    void unhome_locked(const std::string& channel) REDCOORD_REQUIRES(mu_);
    // A group's links per the map's shard (replicas added and dropped).
    void shape_group_locked(shard_group& g, const cluster_shard& shard, retired_links& gone)
        REDCOORD_REQUIRES(mu_);
    // Asks for the map (again, when `fresh`), moves every channel whose home changed or was
    // refused, drops empty groups, re-arms the tick. Runs in the discovery tick.
    void rehome(bool fresh) noexcept;
    // The entries of `names`, told on_link(true) after a move.
    void relinked(const std::vector<std::string>& names);
    bool confirm_clustered(const entry& e, std::chrono::milliseconds wait);
    std::optional<std::string> refusal_clustered(const entry& e);
    subscriber_options shard_link_options();

    endpoint ep_;
    pubsub_mux_options opts_;
    mutable mutex mu_;
    std::map<std::string, std::vector<std::shared_ptr<entry>>> channels_ REDCOORD_GUARDED_BY(mu_);
    std::map<std::string, std::vector<std::shared_ptr<entry>>> patterns_ REDCOORD_GUARDED_BY(mu_);
    std::shared_ptr<subscriber> link_ REDCOORD_GUARDED_BY(mu_);
    std::map<std::string, replica_link> replicas_
        REDCOORD_GUARDED_BY(mu_);                    // by host:port (or socket path)
    bool closing_ REDCOORD_GUARDED_BY(mu_) = false;  // the destructor runs: add no link
    // The master link's last state (its state handler).
    up_flag master_up_ = std::make_shared<std::atomic<bool>>(false);
    // Cluster mode: the groups by their master's host:port, each wanted channel's group key
    // (absent: not homed yet), and the map they follow.
    std::map<std::string, shard_group> shards_ REDCOORD_GUARDED_BY(mu_);
    std::map<std::string, std::string> home_ REDCOORD_GUARDED_BY(mu_);
    std::shared_ptr<const cluster_map> map_ REDCOORD_GUARDED_BY(mu_);
    std::atomic<bool> refused_{false};         // a refusal arrived since the last rehome
    std::atomic<std::int64_t> rehomed_ns_{0};  // steady time of the last rehome
    // Discovery tick only: the ACL refusal of discovery was logged, so each refresh does not
    // log it again (until one succeeds).
    bool discovery_refusal_logged_ = false;
    // Discovery: declared last, destroyed first (its tick reaches the members above).
    std::shared_ptr<redcoord::runtime> rt_;
    std::shared_ptr<connection_pool> cluster_pool_;  // cluster mode: the slot map's source
    counter_handle reconnects_;  // redcoord_reconnects_total{link="pubsub"}; empty when off
    std::unique_ptr<timer> discovery_timer_;
};

/// One listener's registration; unregisters on destruction, after which its handlers are
/// never called again (a handler running at that moment on another thread is waited for).
class pubsub_mux::listener {
public:
    listener() = default;
    listener(listener&&) noexcept = default;
    listener& operator=(listener&& other) noexcept;
    ~listener();

    /// Waits up to `wait` until the server confirmed this listener's channel on the master
    /// link, or on any replica link when the master link is down; true when it did (false
    /// for an empty listener).
    /// @throws permission_error at once when the master refused the (P)SUBSCRIBE for lack of
    ///         ACL permissions (the command or the channel): waiting could not cure that.
    bool wait_confirmed(std::chrono::milliseconds wait) const;
    /// The master's error text when it refused this listener's channel since it was last
    /// subscribed (e.g. `NOPERM ...`); nullopt otherwise. Never throws for a refusal.
    [[nodiscard]] std::optional<std::string> refusal() const;
    /// True when the channel is confirmed on some link now (never throws for a refusal).
    [[nodiscard]] bool confirmed() const;
    /// Unregisters now (what the destructor does).
    void reset() noexcept;
    explicit operator bool() const noexcept { return entry_ != nullptr; }

private:
    friend class pubsub_mux;
    // wait_confirmed() without the refusal check.
    bool confirm(std::chrono::milliseconds wait) const;
    listener(std::shared_ptr<pubsub_mux> mux, std::shared_ptr<entry> e)
        : mux_(std::move(mux)), entry_(std::move(e)) {}
    std::shared_ptr<pubsub_mux> mux_;
    std::shared_ptr<entry> entry_;
};

}  // namespace redcoord::detail

REDCOORD_API_END
