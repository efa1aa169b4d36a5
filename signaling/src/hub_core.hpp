#pragma once
// The shared state behind signal_hub and its waiters: links, routing tables, dedup window
// and the callback thread.

#include <redcoord/core/detail/subscriber_access.hpp>
#include <redcoord/signaling/envelope.hpp>
#include <redcoord/signaling/signal_hub.hpp>

#include <boost/signals2/signal.hpp>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace redcoord::detail {

using slot_signal = boost::signals2::signal<void(const redcoord::signal&)>;

/// What a waiter listens to and what it has received. Guarded by hub_core::mu.
struct waiter_state {
    std::vector<std::string> names;  // channels or patterns, as subscribed
    bool pattern = false;
    std::string id;                  // 16 hex characters
    std::string unicast_channel;     // user channel reported for unicast signals, else empty
    std::deque<redcoord::signal> queue;
    std::atomic<std::size_t> queued{0};  // queue.size(), readable without the lock (spinning)
    std::condition_variable cv;
    bool registered = false;
};

struct hub_core : std::enable_shared_from_this<hub_core> {
    hub_core(connection_pool& p, signal_options o);
    ~hub_core();

    connection_pool& pool;
    signal_options opts;
    std::uint64_t origin;            // this hub's half of every envelope id
    std::atomic<std::uint64_t> seq{0};
    std::string unicast_root;        // <prefix>unicast:{

    // Links. Changed only under sub_mu; the vector is read under sub_mu or after shutdown.
    std::mutex sub_mu;
    std::vector<std::shared_ptr<subscriber>> links;
    std::map<std::string, int> channel_refs, pattern_refs;  // guarded by sub_mu
    // Set by the first slot: from then on every link (also later replicas) keeps a demand
    // raised so that slots run as signals arrive. Guarded by sub_mu.
    bool links_watched = false;

    // Routing, queues, dedup, callbacks. Taken by the link reader threads.
    mutable std::mutex mu;
    bool closed = false;
    std::unordered_map<std::string, std::vector<std::shared_ptr<waiter_state>>> by_channel, by_pattern;
    std::unordered_map<std::string, std::shared_ptr<slot_signal>> slots_channel, slots_pattern;
    dedup_window seen;
    signal_hub_stats counters;

    // Callback thread (started by the first on()).
    std::deque<std::pair<std::shared_ptr<slot_signal>, redcoord::signal>> cb_queue;
    std::condition_variable cb_cv;
    std::thread cb_thread;

    // True while the master link is up (between its state handler's true and false). A
    // unicast waiter falls back to a replica's confirmation only while it is false.
    std::atomic<bool> master_up{false};

    std::shared_ptr<subscriber> make_link(const endpoint& ep, bool is_master);
    void on_message(const pubsub_message& m);
    void callback_loop();
    void shutdown() noexcept;

    std::string next_envelope();
    // Adds/drops references; subscribes/unsubscribes every link on the 0<->1 edges.
    void ref(const std::vector<std::string>& names, bool pattern);
    void unref(const std::vector<std::string>& names, bool pattern) noexcept;
    // Waits until one link confirmed all `names` (we hold references, so they stay wanted).
    // With `master_first`, a replica's confirmation counts only while the master link is down.
    void await_confirmed(const std::vector<std::string>& names, bool pattern, bool master_first = false);
    // Forgets slot signals whose last slot was disconnected. Caller holds `mu`.
    void sweep_slots_locked();

    // A snapshot of the links, for reading them outside sub_mu.
    std::vector<std::shared_ptr<subscriber>> current_links();
    // Reads what every link's socket already holds, on the calling thread (help_read).
    static void read_links(const std::vector<std::shared_ptr<subscriber>>& ls) noexcept;
    // Keeps every link, present and future, watched (the first slot calls it).
    void watch_links();

    void register_waiter(const std::shared_ptr<waiter_state>& st);
    void unregister_waiter(const std::shared_ptr<waiter_state>& st) noexcept;
};

/// Reaches the core of a public signal_hub (barrier keeps its channel subscribed through it).
struct hub_access {
    static const std::shared_ptr<hub_core>& core(const signal_hub& h) noexcept { return h.core_; }
};

/// Keeps `channel` subscribed on every link of a hub without queueing its signals (a
/// reference in the hub's refcount, no waiter). Returned type-erased so that public headers
/// need not name it.
[[nodiscard]] std::shared_ptr<void> hold_channel(const signal_hub& hub, const std::string& channel);

}  // namespace redcoord::detail
