#pragma once
/// @file
/// The runtime's pub/sub multiplexer: one subscriber link per endpoint shared by every lock
/// waiter, elector, signal hub and barrier of the process (Redisson shares one pub/sub
/// connection among its locks the same way). Internal to redcoord (reached through
/// runtime::pubsub()); not a stable API.

#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/subscriber.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace redcoord::detail {

/// Channel (and pattern) listeners over one subscriber link to one endpoint.
///
/// A channel is subscribed when its first listener appears and unsubscribed when its last
/// one goes (reference counts per channel and per pattern). After the link reconnects, the
/// subscriber resubscribes every channel and each listener's `on_link(true)` runs, so a
/// listener re-checks the state it waits on (messages published while the link was down
/// are lost, as pub/sub always loses them). `on_link(false)` runs when the link drops.
///
/// Handlers run on the thread that reads the link (the process's pub/sub reader, or a
/// waiter that reads it itself, see subscriber), one at a time per link; they must return
/// quickly and must not destroy their own listener.
///
/// Thread-safety: every member function may be called from any thread.
class pubsub_mux : public std::enable_shared_from_this<pubsub_mux> {
public:
    /// What one listener is told.
    struct handlers {
        std::function<void(const pubsub_message&)> on_message;  ///< Each message on its channel.
        std::function<void(bool up)> on_link;                   ///< Link (re)subscribed / dropped; may be empty.
    };

    class listener;

    /// Opens no connection yet: the link starts with the first listener.
    explicit pubsub_mux(endpoint ep);
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

    /// True while the link is up and every wanted channel is confirmed.
    [[nodiscard]] bool connected() const;
    /// The endpoint of the link.
    [[nodiscard]] const endpoint& where() const noexcept { return ep_; }
    /// The link itself, started on first use (drivers that read it themselves, tests).
    [[nodiscard]] subscriber& link();
    /// Number of channels and patterns with at least one listener.
    [[nodiscard]] std::size_t interests() const;

    struct entry;

private:
    friend class listener;
    void dispatch(const pubsub_message& m);
    void link_state(bool up);
    void release(const std::shared_ptr<entry>& e) noexcept;
    listener add(bool pattern, std::string name, handlers h);

    endpoint ep_;
    mutable std::mutex mu_;  // guards the maps and link_'s creation
    std::map<std::string, std::vector<std::shared_ptr<entry>>> channels_, patterns_;
    std::unique_ptr<subscriber> link_;  // declared last: its thread stops before the maps go
};

/// One listener's registration; unregisters on destruction, after which its handlers are
/// never called again (a handler running at that moment on another thread is waited for).
class pubsub_mux::listener {
public:
    listener() = default;
    listener(listener&&) noexcept = default;
    listener& operator=(listener&& other) noexcept;
    ~listener();

    /// Waits up to `wait` until the server confirmed this listener's channel on the current
    /// link; true when it did (false for an empty listener).
    bool wait_confirmed(std::chrono::milliseconds wait) const;
    /// True when the channel is confirmed on the current link.
    [[nodiscard]] bool confirmed() const;
    /// Unregisters now (what the destructor does).
    void reset() noexcept;
    explicit operator bool() const noexcept { return entry_ != nullptr; }

private:
    friend class pubsub_mux;
    listener(std::shared_ptr<pubsub_mux> mux, std::shared_ptr<entry> e) : mux_(std::move(mux)), entry_(std::move(e)) {}
    std::shared_ptr<pubsub_mux> mux_;
    std::shared_ptr<entry> entry_;
};

}  // namespace redcoord::detail
