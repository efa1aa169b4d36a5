#include <redcoord/core/detail/release_waiter.hpp>

#include <redcoord/core/deadline.hpp>

namespace redcoord::detail {

release_waiter::release_waiter(std::shared_ptr<redcoord::runtime> rt, std::vector<endpoint> nodes,
                               std::string channel)
    : rt_(rt ? std::move(rt) : redcoord::runtime::shared()), nodes_(std::move(nodes)),
      channel_(std::move(channel)) {}

release_waiter::release_waiter(std::vector<endpoint> nodes, std::string channel)
    : release_waiter(nullptr, std::move(nodes), std::move(channel)) {}

release_waiter::~release_waiter() {
    std::lock_guard sl(start_mu_);
    listeners_.clear();  // no handler runs once this returns: they reach this object
}

void release_waiter::notify() {
    {
        std::lock_guard l(mu_);
        ++generation_;
    }
    cv_.notify_all();
    std::lock_guard w(watch_mu_);
    for (auto& [id, wake] : watchers_) {
        try {
            wake();
        } catch (...) {
            // A wake that throws costs only its own waiter a notice (its timer still runs).
        }
    }
}

std::uint64_t release_waiter::watch(std::function<void()> wake) {
    std::lock_guard w(watch_mu_);
    watchers_.emplace(++next_watch_, std::move(wake));
    return next_watch_;
}

void release_waiter::unwatch(std::uint64_t id) noexcept {
    std::lock_guard w(watch_mu_);
    watchers_.erase(id);
}

std::uint64_t release_waiter::arm(std::chrono::milliseconds confirm, bool& live) {
    std::lock_guard sl(start_mu_);
    const bool fresh = listeners_.empty();
    if (fresh) {
        for (const auto& ep : nodes_) {
            links_.push_back(rt_->pubsub(ep));
            // A dropped link may have swallowed a release: wake waiters on every
            // resubscription so they re-check at once instead of sleeping out their timer.
            listeners_.push_back(
                links_.back()->listen(channel_, {[this](const pubsub_message&) { notify(); },
                                                 [this](bool up) {
                                                     if (up) notify();
                                                 }}));
        }
        // The links are all it needs from here on: a thousand waiting locks need not keep a
        // thousand copies of N endpoints, nor of their channel's name.
        std::vector<endpoint>().swap(nodes_);
        std::string().swap(channel_);
    }
    const auto until = deadline_after(confirm);
    live = false;
    for (const auto& l : listeners_) {
        if (l.confirmed()) {
            live = true;
            break;
        }
    }
    // Wait for the first confirmation only, and only when just started: links that are down
    // later reconnect in the background while callers rely on their fallback timers.
    while (fresh && !live && !listeners_.empty() && std::chrono::steady_clock::now() < until) {
        for (const auto& l : listeners_) {
            const auto left = time_left<std::chrono::milliseconds>(until);
            if (left.count() <= 0) break;
            if (l.wait_confirmed(std::min(left, std::chrono::milliseconds(5)))) {
                live = true;
                break;
            }
        }
    }
    return generation();
}

bool release_waiter::live() const {
    std::lock_guard sl(start_mu_);
    for (const auto& l : listeners_)
        if (l.confirmed()) return true;
    return false;
}

std::optional<std::string> release_waiter::refusal() const {
    std::lock_guard sl(start_mu_);
    for (const auto& l : listeners_)
        if (auto text = l.refusal()) return text;
    return std::nullopt;
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
