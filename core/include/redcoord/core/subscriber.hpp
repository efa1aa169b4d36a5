#pragma once
/// @file
/// A dedicated pub/sub connection with its own reader thread that reconnects and
/// resubscribes by itself (redis.io: Pub/Sub).

#include <redcoord/core/endpoint.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace redcoord {

/// One message received on a subscription.
struct pubsub_message {
    std::string channel;   ///< The channel it was published to.
    std::string pattern;   ///< The matching pattern for PSUBSCRIBE deliveries, else empty.
    std::string payload;   ///< The payload, binary-safe.
};

/// Reconnection timing of a subscriber.
struct subscriber_options {
    /// First delay before reconnecting after the link drops; doubles up to `reconnect_max`,
    /// with random jitter of up to half the delay. It returns to this value only after a link
    /// stayed up for `reconnect_max`, so a link the server kills right after subscribing
    /// (an output-buffer limit, a proxy) is redialled ever more slowly. Must be > 0.
    std::chrono::milliseconds reconnect_min{20};
    /// Longest delay between reconnect attempts. Must be >= reconnect_min.
    std::chrono::milliseconds reconnect_max{1000};
    /// The reader PINGs an idle link this often and drops it after three intervals without
    /// any data, so a paused or silently dead server is noticed. Zero disables the check.
    std::chrono::milliseconds health_interval{1000};
    /// Zero (the default): the reader thread watches the socket and reads every message as
    /// soon as it arrives. Greater than zero (milliseconds): *demand-driven reading*. The
    /// reader watches the socket only while prompt delivery is wanted: adjust_demand() was
    /// raised, a subscribe()/psubscribe() is waiting for its confirmation, or a
    /// (re)subscription is unconfirmed. Otherwise it drains whatever has arrived every
    /// `drain_interval`, doubling the interval up to 16 times it while it finds nothing (and
    /// never longer than a non-zero health_interval), and a thread that wants a message reads the socket
    /// itself with help_read(). Why: every message that wakes a reader blocked on the socket
    /// costs the host a thread wake-up, and on a small machine that wake-up competes with the
    /// process's own work, such as the publish round trip of a thread that signals and then
    /// waits. Messages are never dropped by the delay, only read later; a burst larger than
    /// the socket buffer plus the server's pub/sub output-buffer limit within one interval
    /// would make the server close the link, so keep the interval short (a few ms).
    std::chrono::milliseconds drain_interval{0};
};

/// A pub/sub connection to one server (never taken from a pool) and the thread that reads it.
///
/// With a Sentinel endpoint (`redis-sentinel://...`) every (re)connect goes to the master the
/// sentinels name (shared_sentinel_resolver(), see sentinel.hpp), and a failover announced by
/// the sentinels moves the link to the new master (it drops and resubscribes).
///
/// The subscriber keeps the set of channels and patterns it was asked for; after the link
/// drops it reconnects with exponential backoff and subscribes to all of them again. Messages
/// published while the link was down are lost (pub/sub is fire-and-forget): callers that must
/// not miss an event keep state in keys and use messages only to wake.
///
/// Thread-safety: all member functions may be called from any thread. The message and state
/// handlers run on the reader thread (the message handler also on a help_read() caller),
/// one at a time, in arrival order; a handler must not call
/// back into the same subscriber's blocking functions (subscribe/psubscribe with a wait) and
/// should return quickly. An exception escaping a handler is swallowed and counted.
class subscriber {
public:
    /// Called for each message.
    using message_handler = std::function<void(const pubsub_message&)>;
    /// Called with true when (re)subscribed after a connect, false when the link dropped.
    using state_handler = std::function<void(bool connected)>;

    /// Starts the reader thread, which connects at once (and keeps retrying if it cannot).
    /// @throws invalid_argument for a missing handler or bad options.
    subscriber(endpoint ep, message_handler on_message, subscriber_options opts = {},
               state_handler on_state = {});
    /// Stops and joins the reader thread; never throws, never hangs longer than one
    /// connect_timeout.
    ~subscriber();
    subscriber(const subscriber&) = delete;
    subscriber& operator=(const subscriber&) = delete;

    /// Adds channels; returns true once the server confirmed all of them on the current
    /// link, false when `wait` passed first (they stay wanted and are subscribed as soon as
    /// the link is up). A zero wait does not wait; any wait, up to `milliseconds::max()`, is
    /// safe (no overflow). A channel counts as confirmed only once the server answered the
    /// last SUBSCRIBE sent for it (not an earlier one, before an unsubscribe).
    /// If the server refuses the SUBSCRIBE with an error reply (e.g. `NOPERM`: the ACL user
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
    /// Closes the current link as if the network dropped it (tests, failover): the reader
    /// reconnects and resubscribes.
    void drop_link();

    /// Reads and dispatches, on the calling thread, whatever has already arrived on the
    /// link, unless another thread is reading it right now; never blocks. For a thread about
    /// to wait for a message: when the message is already in the socket it gets it without
    /// the hop through the reader thread (a wake-up that costs tens of microseconds on a busy
    /// machine). The message handler then runs on the calling thread, still one call at a
    /// time and in arrival order. A read failure is left to the reader thread, which
    /// reconnects as usual.
    /// @return true when something was read.
    bool help_read() noexcept;

    /// Raises (`delta` > 0) or lowers (`delta` < 0) the demand for prompt delivery, a count
    /// that only matters with subscriber_options::drain_interval > 0: while it is above zero
    /// the reader thread watches the socket and delivers each message as it arrives. A
    /// thread about to block until a message comes raises it for the duration of the block;
    /// a component whose handler must run promptly (callbacks) raises it for its lifetime.
    /// Raising it from zero wakes the reader so that it starts watching at once (a message
    /// already in the socket is then read without waiting for the next drain). Never blocks;
    /// callers keep their raises and lowers balanced.
    void adjust_demand(int delta) noexcept;

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

}  // namespace redcoord
