#include <redcoord/core/detail/pubsub_mux.hpp>
#include <redcoord/core/errors.hpp>

#include <algorithm>
#include <utility>

namespace redcoord::detail {

struct pubsub_mux::entry {
    bool pattern = false;
    std::string name;
    handlers h;
    // Held while a handler runs and while the listener unregisters, so that after reset()
    // returns no handler of it runs. Recursive: a handler may reset its own listener.
    std::recursive_mutex call_mu;
    bool gone = false;  // under call_mu
};

pubsub_mux::pubsub_mux(endpoint ep) : ep_(std::move(ep)) {}

pubsub_mux::~pubsub_mux() {
    std::unique_ptr<subscriber> link;
    {
        std::lock_guard l(mu_);
        link = std::move(link_);
    }
    link.reset();  // stops delivery before the maps go
}

subscriber& pubsub_mux::link() {
    std::lock_guard l(mu_);
    if (!link_)
        link_ = std::make_unique<subscriber>(
            ep_, [this](const pubsub_message& m) { dispatch(m); }, subscriber_options{},
            [this](bool up) { link_state(up); });
    return *link_;
}

pubsub_mux::listener pubsub_mux::listen(std::string channel, handlers h) {
    return add(false, std::move(channel), std::move(h));
}

pubsub_mux::listener pubsub_mux::listen_pattern(std::string pattern, handlers h) {
    return add(true, std::move(pattern), std::move(h));
}

pubsub_mux::listener pubsub_mux::add(bool pattern, std::string name, handlers h) {
    if (name.empty()) throw invalid_argument("pub/sub listener needs a channel or pattern");
    if (!h.on_message) throw invalid_argument("pub/sub listener needs a message handler");
    auto e = std::make_shared<entry>();
    e->pattern = pattern;
    e->name = std::move(name);
    e->h = std::move(h);
    auto& sub = link();
    std::lock_guard l(mu_);
    auto& list = (pattern ? patterns_ : channels_)[e->name];
    // Under mu_, like the UNSUBSCRIBE of the last listener: the subscriber sees the two in
    // the order the map changed.
    if (list.empty()) {
        if (pattern) (void)sub.psubscribe({e->name}, std::chrono::milliseconds(0));
        else (void)sub.subscribe({e->name}, std::chrono::milliseconds(0));
    }
    list.push_back(e);
    return listener(shared_from_this(), std::move(e));
}

void pubsub_mux::release(const std::shared_ptr<entry>& e) noexcept {
    {
        std::lock_guard c(e->call_mu);
        e->gone = true;
    }
    bool last = false;
    subscriber* sub = nullptr;
    {
        std::lock_guard l(mu_);
        auto& map = e->pattern ? patterns_ : channels_;
        auto it = map.find(e->name);
        if (it == map.end()) return;
        auto& list = it->second;
        list.erase(std::remove(list.begin(), list.end(), e), list.end());
        if (list.empty()) {
            map.erase(it);
            last = true;
            sub = link_.get();
        }
        // Under mu_: a listen() of the same name either came before (then the list was not
        // empty) or comes after and subscribes again.
        if (last && sub) {
            try {
                if (e->pattern) sub->punsubscribe({e->name});
                else sub->unsubscribe({e->name});
            } catch (...) {
            }
        }
    }
}

void pubsub_mux::dispatch(const pubsub_message& m) {
    std::vector<std::shared_ptr<entry>> targets;
    {
        std::lock_guard l(mu_);
        const auto& map = m.pattern.empty() ? channels_ : patterns_;
        auto it = map.find(m.pattern.empty() ? m.channel : m.pattern);
        if (it == map.end()) return;
        targets = it->second;
    }
    for (const auto& e : targets) {
        std::lock_guard c(e->call_mu);
        if (!e->gone) e->h.on_message(m);
    }
}

void pubsub_mux::link_state(bool up) {
    std::vector<std::shared_ptr<entry>> targets;
    {
        std::lock_guard l(mu_);
        for (const auto* map : {&channels_, &patterns_})
            for (const auto& [name, list] : *map) targets.insert(targets.end(), list.begin(), list.end());
    }
    for (const auto& e : targets) {
        std::lock_guard c(e->call_mu);
        if (!e->gone && e->h.on_link) {
            try {
                e->h.on_link(up);
            } catch (...) {
            }
        }
    }
}

bool pubsub_mux::connected() const {
    std::lock_guard l(mu_);
    return link_ && link_->connected();
}

std::size_t pubsub_mux::interests() const {
    std::lock_guard l(mu_);
    return channels_.size() + patterns_.size();
}

pubsub_mux::listener& pubsub_mux::listener::operator=(listener&& other) noexcept {
    if (this != &other) {
        reset();
        mux_ = std::move(other.mux_);
        entry_ = std::move(other.entry_);
    }
    return *this;
}

pubsub_mux::listener::~listener() { reset(); }

void pubsub_mux::listener::reset() noexcept {
    if (entry_ && mux_) mux_->release(entry_);
    entry_.reset();
    mux_.reset();
}

bool pubsub_mux::listener::wait_confirmed(std::chrono::milliseconds wait) const {
    if (!entry_) return false;
    auto& sub = mux_->link();
    return entry_->pattern ? sub.psubscribe({entry_->name}, wait) : sub.subscribe({entry_->name}, wait);
}

bool pubsub_mux::listener::confirmed() const { return wait_confirmed(std::chrono::milliseconds(0)); }

}  // namespace redcoord::detail
