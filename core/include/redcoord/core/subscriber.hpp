#pragma once
/// @file
/// A dedicated pub/sub connection that reconnects and resubscribes by itself, read by its
/// runtime's shared pub/sub reader (redis.io: Pub/Sub).

#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/export.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord {

class runtime;

/// One message received on a subscription.
struct pubsub_message {
    std::string channel;  ///< The channel it was published to.
    std::string pattern;  ///< The matching pattern for PSUBSCRIBE deliveries, else empty.
    std::string payload;  ///< The payload, binary-safe.
};

namespace detail {

/// Internal reading knobs of a subscriber (the signal hub's on-demand reading). Not a
/// stable API: leave it at its default.
struct subscriber_tuning {
    /// Zero (the default): the link is watched and every message is read as soon as it
    /// arrives. Greater than zero: *demand-driven reading*. The link is watched only while
    /// prompt delivery is wanted (subscriber_access::adjust_demand() raised, a subscribe()
    /// waiting for its confirmation, a (re)subscription unconfirmed); otherwise whatever has
    /// arrived is drained every `drain_interval`, doubling up to 16 times it while nothing
    /// comes (and never longer than a non-zero health_interval), and a thread that wants a
    /// message reads the socket itself (subscriber_access::help_read()). It saves the wake-up
    /// of the pub/sub reader per message, which on a small machine competes with the
    /// process's own work. Messages are only read later, never dropped; keep it to a few ms
    /// (a burst larger than the socket buffer plus the server's pub/sub output-buffer limit
    /// within one interval makes the server close the link). Must be >= 0.
    std::chrono::milliseconds drain_interval{0};
    /// Told (on the reader thread, after the refusal is recorded; it must return quickly and
    /// must not call into this subscriber) each time the server refuses a subscription: an
    /// error reply to a SUBSCRIBE, or a sharded channel the node dropped by itself. The
    /// cluster pub/sub multiplexer uses it to look for the slot's new home. May be empty.
    std::function<void()> on_refused;
};

class subscriber_access;

}  // namespace detail

/// Reconnection timing of a subscriber.
struct subscriber_options {
    /// First delay before reconnecting after the link drops; doubles up to `reconnect_max`,
    /// with random jitter of up to half the delay. It returns to this value only after a link
    /// stayed up for `reconnect_max`, so a link the server kills right after subscribing
    /// (an output-buffer limit, a proxy) is redialled ever more slowly. Must be > 0.
    std::chrono::milliseconds reconnect_min{20};
    /// Longest delay between reconnect attempts. Must be >= reconnect_min.
    std::chrono::milliseconds reconnect_max{1000};
    /// An idle link is PINGed this often and dropped after three intervals without any
    /// data, so a paused or silently dead server is noticed. Zero disables the check.
    std::chrono::milliseconds health_interval{1000};
    /// Sharded pub/sub (Redis 7.0, for a Redis Cluster node): channels are subscribed with
    /// SSUBSCRIBE and dropped with SUNSUBSCRIBE, and messages published with SPUBLISH arrive.
    /// The node must serve the channel's hash slot (as master or replica): otherwise the
    /// subscription is refused with the server's `MOVED` text. When the slot moves away the
    /// server drops the subscription itself; the channel is then refused the same way
    /// (last_error() says so) and stops being wanted. psubscribe() throws invalid_argument:
    /// sharded pub/sub has no patterns. Source: redis.io, SSUBSCRIBE and "Sharded Pub/Sub".
    bool sharded = false;
    /// Internal; leave at its default (see detail::subscriber_tuning).
    detail::subscriber_tuning tuning{};
    /// The runtime whose pub/sub reader thread and tick workers serve the link (and whose
    /// Sentinel resolver a `redis-sentinel://` endpoint uses); empty means the process's
    /// runtime::shared(). The subscriber holds it while it lives.
    std::shared_ptr<redcoord::runtime> runtime{};
};

/// A pub/sub connection to one server (never taken from a pool) that reconnects and
/// resubscribes by itself.
///
/// With a Sentinel endpoint (`redis-sentinel://...`) every (re)connect goes to the master the
/// sentinels name (its runtime's resolver, runtime::sentinel()), and a failover announced by
/// the sentinels moves the link to the new master (it drops and resubscribes).
///
/// The subscriber keeps the set of channels and patterns it was asked for; after the link
/// drops it reconnects with exponential backoff and subscribes to all of them again. Messages
/// published while the link was down are lost (pub/sub is fire-and-forget): callers that must
/// not miss an event keep state in keys and use messages only to wake.
///
/// Threads: a subscriber owns no thread. Every subscriber of a runtime
/// (subscriber_options::runtime) is read by that runtime's one pub/sub reader thread, which
/// starts with the runtime's first subscriber and stops when its last one is destroyed. Its
/// (re)connects run as ticks of a timer of its own on the runtime's tick workers, so a server
/// that does not answer holds one tick worker (the timer service starts another for the other
/// timers after 10 ms) and delays neither other subscribers' connects nor their reading.
/// Another runtime's subscribers have threads of their own.
///
/// @par Thread safety
/// All member functions may be called from any thread. The message and state
/// handlers of one subscriber run one at a time, in arrival order, on the shared reader
/// thread (the message handler also on a thread of redcoord's that reads the link itself
/// while it waits for a message). **The handlers of all subscribers share that thread: they
/// must return quickly** and must not block on anything a subscriber delivers (such as a
/// subscribe()/psubscribe() with a wait, or a lock waiting for a release). An exception
/// escaping a handler is swallowed.
///
/// @par Errors
/// The constructor throws invalid_argument for a missing handler or bad options; subscribe()
/// returns false instead of throwing when the server refuses a channel or the wait passes.
/// Connection failures are not thrown: the state handler hears them, and the link reconnects with
/// back-off by itself.
///
/// @par Cost
/// One connection of its own (never from a pool), read by its runtime's shared reader thread.
/// Subscribing and unsubscribing are one write each (subscribe() then waits for the confirmation,
/// up to its wait); after a reconnect every channel and pattern is subscribed again.
class subscriber {
public:
    /// Called for each message.
    using message_handler = std::function<void(const pubsub_message&)>;
    /// Called with true when (re)subscribed after a connect, false when the link dropped.
    using state_handler = std::function<void(bool connected)>;

    /// Registers with the shared reader, which connects at once (and keeps retrying if it
    /// cannot).
    /// @throws invalid_argument for a missing handler or bad options.
    subscriber(endpoint ep, message_handler on_message, subscriber_options opts = {},
               state_handler on_state = {});
    /// Closes the link; never throws, never hangs longer than one connect_timeout (the last
    /// subscriber of its runtime waits for the shared threads to stop). When it returns no
    /// handler of this subscriber runs any more (one running on another thread is waited
    /// for; do not destroy a subscriber from its own handler).
    ~subscriber();
    subscriber(const subscriber&) = delete;
    subscriber& operator=(const subscriber&) = delete;

    /// Adds channels; returns true once the server confirmed all of them on the current
    /// link, false when `wait` passed first (they stay wanted and are subscribed as soon as
    /// the link is up). A zero wait does not wait; any wait, up to `milliseconds::max()`, is
    /// safe (no overflow). A channel counts as confirmed only once the server answered the
    /// last SUBSCRIBE sent for it (not an earlier one, before an unsubscribe).
    /// If the server refuses the SUBSCRIBE with an error reply (for example `NOPERM`: the ACL user
    /// may not access the channel), returns false at once; the refused channels are then no
    /// longer wanted (call subscribe() again to retry) and last_error() holds the server's text.
    bool subscribe(const std::vector<std::string>& channels, std::chrono::milliseconds wait);
    /// Adds patterns (PSUBSCRIBE); same contract as subscribe().
    bool psubscribe(const std::vector<std::string>& patterns, std::chrono::milliseconds wait);
    /// Removes channels; does not wait.
    void unsubscribe(const std::vector<std::string>& channels);
    /// Removes patterns; does not wait.
    void punsubscribe(const std::vector<std::string>& patterns);

    /// True while the link is up and every wanted subscription has been confirmed (names the
    /// server refused are not wanted).
    [[nodiscard]] bool connected() const;
    /// How many times the link was (re)established.
    [[nodiscard]] std::uint64_t connects() const;
    /// The text of the last error reply the server sent on the link (for example `NOPERM`
    /// for a channel the ACL user may not access), empty when there was none. Kept across
    /// reconnects. Thread-safe.
    [[nodiscard]] std::string last_error() const;
    /// The endpoint this subscriber reads from.
    [[nodiscard]] const endpoint& where() const noexcept;
    /// Closes the current link as if the network dropped it (tests, failover): the link
    /// reconnects and resubscribes.
    void drop_link();

private:
    friend class detail::subscriber_access;
    struct impl;
    std::unique_ptr<impl> impl_;
};

}  // namespace redcoord

REDCOORD_API_END
