#include "release_waiter.hpp"

namespace redcoord::detail {

release_waiter::release_waiter(std::vector<endpoint> nodes, std::string channel)
    : nodes_(std::move(nodes)), channel_(std::move(channel)) {}

release_waiter::~release_waiter() {
    std::lock_guard sl(start_mu_);
    subs_.clear();  // joins the reader threads before the members they call are gone
}

void release_waiter::notify() {
    {
        std::lock_guard l(mu_);
        ++generation_;
    }
    cv_.notify_all();
}

std::uint64_t release_waiter::arm(std::chrono::milliseconds confirm, bool& live) {
    std::lock_guard sl(start_mu_);
    const bool fresh = subs_.empty();
    if (fresh) {
        for (const auto& ep : nodes_) {
            // A dropped link may have swallowed a release: wake waiters on every reconnect
            // so they re-check at once instead of sleeping out their fallback timer.
            subs_.push_back(std::make_unique<subscriber>(
                ep, [this](const pubsub_message&) { notify(); }, subscriber_options{},
                [this](bool connected) {
                    if (connected) notify();
                }));
        }
        for (auto& s : subs_) (void)s->subscribe({channel_}, std::chrono::milliseconds(0));
    }
    const auto until = std::chrono::steady_clock::now() + confirm;
    live = false;
    for (auto& s : subs_) {
        if (s->connected()) {
            live = true;
            break;
        }
    }
    // Wait for the first confirmation only, and only when just started: links that are down
    // later reconnect in the background while callers rely on their fallback timers.
    while (fresh && !live && std::chrono::steady_clock::now() < until) {
        for (auto& s : subs_) {
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
            if (left.count() <= 0) break;
            if (s->subscribe({channel_}, std::min(left, std::chrono::milliseconds(5)))) {
                live = true;
                break;
            }
        }
    }
    return generation();
}

bool release_waiter::live() const {
    std::lock_guard sl(start_mu_);
    for (const auto& s : subs_)
        if (s->connected()) return true;
    return false;
}

std::uint64_t release_waiter::generation() const {
    std::lock_guard l(mu_);
    return generation_;
}

bool release_waiter::wait(std::uint64_t seen, std::chrono::steady_clock::time_point until) {
    std::unique_lock l(mu_);
    return cv_.wait_until(l, until, [&] { return generation_ != seen; });
}

}  // namespace redcoord::detail
