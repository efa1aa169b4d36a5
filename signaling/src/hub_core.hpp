#pragma once
// The shared state behind signal_hub and its waiters: the hub's listeners on its runtime's
// pub/sub link, routing tables, dedup window and the slots' strand. A hub owns no thread and
// no connection of its own (unless its link options differ from the runtime's: then it owns a
// private multiplexer, still read by the process's shared pub/sub reader).

#include <redcoord/core/detail/observe.hpp>
#include <redcoord/core/detail/pubsub_mux.hpp>
#include <redcoord/core/detail/serial_executor.hpp>
#include <redcoord/core/detail/subscriber_access.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/signaling/envelope.hpp>
#include <redcoord/signaling/signal_hub.hpp>

#include <boost/signals2/signal.hpp>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <unordered_map>

namespace redcoord::detail {

using slot_signal = boost::signals2::signal<void(const redcoord::signal&)>;

/// The largest signal_options::max_payload: Redis's largest bulk argument (proto-max-bulk-len,
/// 512 MiB by default) less the envelope the hub puts in front of the payload.
inline constexpr std::size_t max_payload_ceiling = (std::size_t{512} << 20) - envelope_overhead;

/// What a waiter listens to and what it has received. Guarded by hub_core::mu.
struct waiter_state {
    std::vector<std::string> names;  // channels or patterns, as subscribed
    bool pattern = false;
    std::string id;               // 16 hex characters
    std::string unicast_channel;  // user channel reported for unicast signals, else empty
    std::deque<redcoord::signal> queue;
    std::atomic<std::size_t> queued{0};  // queue.size(), readable without the lock (spinning)
    std::condition_variable cv;
    bool registered = false;
    // Asynchronous waits have no thread to wake through `cv`: each registers a wake-up, called
    // under hub_core::mu after every push and at shutdown (on the reading thread: it must only
    // post).
    std::map<std::uint64_t, std::function<void()>> wakers;
    std::uint64_t next_waker = 0;
};

struct hub_core : std::enable_shared_from_this<hub_core> {
    hub_core(connection_pool& p, signal_options o);
    ~hub_core();

    connection_pool& pool;
    signal_options opts;
    // The two halves of every envelope id. origin: this host's boot tag in the top 24 bits
    // (host_boot_tag()), 40 random bits below. seq: the steady clock's nanoseconds at
    // publication, forced strictly increasing (the dedup window needs a growing seq per
    // origin), so a receiver on the same host and boot reads the send time from the id:
    // redcoord_signal_delivery_seconds, with no change to the wire format.
    std::uint64_t origin;
    std::atomic<std::uint64_t> seq{0};
    histogram_handle delivery;  // redcoord_signal_delivery_seconds; empty when metrics are off
    std::string unicast_root;   // <prefix>unicast:{

    // Declared before everything that runs on it, so it outlives the strand and listeners.
    std::shared_ptr<redcoord::runtime> rt;
    // The master endpoint's multiplexer: the runtime's shared one, or a private one when
    // opts.link differs from the runtime's link options. It also listens on the master's
    // replicas (discovered, and those given to the hub), so every signal normally arrives
    // once per link and the dedup window drops the copies.
    std::shared_ptr<pubsub_mux> mux;

    // The hub's interest in each channel and pattern: one mux listener per name, whatever
    // the number of waiters, slots and barrier anchors of this hub that use it (the hub
    // routes and deduplicates; the mux counts listeners per name across the process and
    // subscribes on the first, unsubscribes on the last). Guarded by sub_mu. A listener is
    // never reset under sub_mu or mu: resetting waits for a running handler, which takes mu.
    struct interest {
        int refs = 0;
        std::shared_ptr<pubsub_mux::listener> listener;  // shared with await_confirmed()
    };
    std::mutex sub_mu;
    std::map<std::string, interest> channel_refs, pattern_refs;
    // Set by the first slot: from then on the master link keeps a demand raised, so that on
    // a link read on demand slots run as signals arrive. Guarded by sub_mu.
    bool link_watched = false;
    bool sub_closed = false;  // guarded by sub_mu: no listener is added after shutdown

    // Routing, queues, dedup. Taken by whichever thread reads the link.
    mutable std::mutex mu;
    bool closed = false;
    std::unordered_map<std::string, std::vector<std::shared_ptr<waiter_state>>> by_channel,
        by_pattern;
    std::unordered_map<std::string, std::shared_ptr<slot_signal>> slots_channel, slots_pattern;
    dedup_window seen;
    signal_hub_stats counters;

    // Slots run here: one at a time, in arrival order, on the runtime's callback thread.
    strand callbacks;

    void on_message(const pubsub_message& m);
    void shutdown() noexcept;

    std::string next_envelope();
    // Adds/drops references; adds/resets this hub's listener on the 0<->1 edges.
    void ref(const std::vector<std::string>& names, bool pattern);
    void unref(const std::vector<std::string>& names, bool pattern) noexcept;
    void ref_each(const std::vector<std::string>& names, bool pattern, std::size_t& done);
    // Waits until the link confirmed all `names` (we hold references, so they stay wanted):
    // the master link, or a replica link while the master link is down.
    void await_confirmed(const std::vector<std::string>& names, bool pattern);
    // Forgets slot signals whose last slot was disconnected. Caller holds `mu`.
    void sweep_slots_locked();

    // Reads what the master link's socket already holds, on the calling thread (help_read).
    void read_link() noexcept;
    // Keeps the master link watched for the hub's lifetime (the first slot calls it).
    void watch_link();

    void register_waiter(const std::shared_ptr<waiter_state>& st);
    void unregister_waiter(const std::shared_ptr<waiter_state>& st) noexcept;
};

/// An asynchronous wait's wake-up on a waiter's queue, for its lifetime: `wake` is called
/// under hub_core::mu after every push and at the hub's shutdown, on the reading thread, so it
/// must only post.
class queue_wake {
public:
    queue_wake(std::shared_ptr<hub_core> core, std::shared_ptr<waiter_state> st,
               std::function<void()> wake);
    ~queue_wake();
    queue_wake(const queue_wake&) = delete;
    queue_wake& operator=(const queue_wake&) = delete;

private:
    std::shared_ptr<hub_core> core_;
    std::shared_ptr<waiter_state> st_;
    std::uint64_t id_;
};

/// Reaches the core and queue of a public waiter (the asynchronous waits).
struct waiter_access {
    static const std::shared_ptr<hub_core>& core(const waiter& w) noexcept { return w.core_; }
    static const std::shared_ptr<waiter_state>& state(const waiter& w) noexcept { return w.state_; }
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
