#pragma once
/// @file
/// The runtime's pub/sub multiplexer: one subscriber link per endpoint shared by every lock
/// waiter, elector, signal hub and barrier of the process (Redisson shares one pub/sub
/// connection among its locks the same way), plus one link per replica of that endpoint.
/// Internal to redcoord (reached through runtime::pubsub()); not a stable API.

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
#include <string>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord {
class runtime;
}

namespace redcoord::detail {

class timer;
class strand;

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
/// Replica discovery runs on the runtime's callback thread (scheduled by its timer thread),
/// bounded by `discovery_timeout`, never on a caller's thread.
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
    /// The master link itself, started on first use (drivers that read it themselves, tests).
    [[nodiscard]] subscriber& link();
    /// Number of channels and patterns with at least one listener.
    [[nodiscard]] std::size_t interests() const;

    struct entry;

private:
    friend class listener;
    struct replica_link {
        endpoint ep;
        bool given = false;  // by add_replica(): kept when discovery does not list it
        std::unique_ptr<subscriber> sub;
    };
    void dispatch(const pubsub_message& m);
    void link_state(bool up);
    void release(const std::shared_ptr<entry>& e) noexcept;
    listener add(bool pattern, std::string name, handlers h);
    subscriber& link_locked() REDCOORD_REQUIRES(mu_);
    std::unique_ptr<subscriber> make_link(const endpoint& ep, bool master);
    void subscribe_all(subscriber& s) REDCOORD_REQUIRES(mu_);
    void discovered(const std::vector<endpoint>& found);
    void discover() noexcept;

    endpoint ep_;
    pubsub_mux_options opts_;
    mutable mutex mu_;
    std::map<std::string, std::vector<std::shared_ptr<entry>>> channels_ REDCOORD_GUARDED_BY(mu_);
    std::map<std::string, std::vector<std::shared_ptr<entry>>> patterns_ REDCOORD_GUARDED_BY(mu_);
    std::unique_ptr<subscriber> link_ REDCOORD_GUARDED_BY(mu_);
    std::map<std::string, replica_link> replicas_
        REDCOORD_GUARDED_BY(mu_);                    // by host:port (or socket path)
    bool closing_ REDCOORD_GUARDED_BY(mu_) = false;  // the destructor runs: add no link
    std::atomic<bool> master_up_{false};  // the master link's last state (its state handler)
    // Discovery: declared last, destroyed first (its tick and job reach the members above).
    std::shared_ptr<redcoord::runtime> rt_;
    counter_handle reconnects_;  // redcoord_reconnects_total{link="pubsub"}; empty when off
    std::unique_ptr<strand> discovery_strand_;
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
