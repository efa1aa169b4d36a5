#pragma once
/// @file
/// Internal to redcoord, not a stable API: shared by the lock and limit parts.
//
// Waiting for a lock's release without polling (as Redisson's RLock does): one listener per
// node on the lock's channel, through the runtime's shared pub/sub link of that node (one
// connection and no thread of its own, however many locks wait). Each message bumps a
// generation counter and wakes the waiting threads. A waiter reads the generation *before*
// its failed attempt, so a release that happens after the attempt is never missed while the
// link is up; messages lost while it is down are covered by the caller's fallback timer (the
// holder's PTTL), and every resubscription after a reconnect wakes the waiters to re-check.

#include <redcoord/core/detail/pubsub_mux.hpp>
#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/core/runtime.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord::detail {

class release_waiter {
public:
    release_waiter(std::shared_ptr<redcoord::runtime> rt, std::vector<endpoint> nodes,
                   std::string channel);
    // The same on the process's shared runtime.
    release_waiter(std::vector<endpoint> nodes, std::string channel);
    ~release_waiter();
    release_waiter(const release_waiter&) = delete;
    release_waiter& operator=(const release_waiter&) = delete;

    // Starts listening on first use and then waits up to `confirm` for at least one node to
    // confirm the subscription (later calls do not wait). Returns the current generation and
    // whether any link is confirmed (when none is, callers keep their fallback timer short).
    std::uint64_t arm(std::chrono::milliseconds confirm, bool& live);
    // True when at least one node's subscription is up and confirmed.
    [[nodiscard]] bool live() const;
    // The error text of the first node that refused the channel's subscription since it was
    // last subscribed (e.g. `NOPERM ...`), or nullopt; never waits for a link.
    [[nodiscard]] std::optional<std::string> refusal() const;
    // The current generation.
    [[nodiscard]] std::uint64_t generation() const;
    // Blocks until the generation differs from `seen` (true) or `until` passes (false).
    bool wait(std::uint64_t seen, std::chrono::steady_clock::time_point until);
    // Calls `wake` after each generation bump (on the pub/sub link's thread: it must only
    // post) until the returned id is passed to unwatch(). For asynchronous waiters, which
    // have no thread to block in wait().
    std::uint64_t watch(std::function<void()> wake);
    // Stops calling the `wake` of `id`; when it returns, that `wake` is not running.
    void unwatch(std::uint64_t id) noexcept;

private:
    void notify();

    std::shared_ptr<redcoord::runtime> rt_;
    std::vector<endpoint> nodes_;  // until the first arm() made the links
    std::string channel_;          // likewise
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::uint64_t generation_ = 0;
    // Asynchronous waiters: called after a bump, under watch_mu_ (so unwatch() can wait out a
    // running call).
    std::mutex watch_mu_;
    std::map<std::uint64_t, std::function<void()>> watchers_;
    std::uint64_t next_watch_ = 0;
    mutable std::mutex start_mu_;  // serialises the lazy start; never held while mu_ is waited on
    std::vector<std::shared_ptr<pubsub_mux>> links_;
    std::vector<pubsub_mux::listener> listeners_;  // after links_: released first
};

}  // namespace redcoord::detail

REDCOORD_API_END
