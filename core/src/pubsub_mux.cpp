#include "pubsub_mux_entry.hpp"
#include "runtime_services.hpp"

#include <redcoord/core/deadline.hpp>
#include <redcoord/core/detail/pubsub_mux.hpp>
#include <redcoord/core/detail/refusal.hpp>
#include <redcoord/core/detail/serial_executor.hpp>
#include <redcoord/core/detail/subscriber_access.hpp>
#include <redcoord/core/detail/timer_service.hpp>
#include <redcoord/core/errors.hpp>

#include <algorithm>
#include <utility>

namespace redcoord::detail {

// Two endpoints that reach the same server; credentials and timeouts do not matter here.
std::string pubsub_address_of(const endpoint& ep) {
    return ep.unix_path.empty() ? ep.host + ':' + std::to_string(ep.port) : "unix:" + ep.unix_path;
}

pubsub_mux::pubsub_mux(endpoint ep) : ep_(std::move(ep)) {
    opts_.follow_replicas = false;
    if (ep_.is_cluster())
        throw invalid_argument(
            "pubsub_mux: a Redis Cluster endpoint needs a runtime (its slot map)");
}

pubsub_mux::pubsub_mux(endpoint ep, std::shared_ptr<redcoord::runtime> rt, pubsub_mux_options opts)
    : ep_(std::move(ep)), opts_(opts), rt_(std::move(rt)) {
    if (opts_.replica_refresh.count() <= 0)
        throw invalid_argument("pubsub_mux_options::replica_refresh must be > 0");
    if (opts_.discovery_timeout.count() <= 0)
        throw invalid_argument("pubsub_mux_options::discovery_timeout must be > 0");
    if (ep_.is_cluster() && !rt_)
        throw invalid_argument(
            "pubsub_mux: a Redis Cluster endpoint needs a runtime (its slot map)");
    // On a cluster each shard's group has its replicas from the slot map instead.
    if (!rt_ || ep_.is_cluster()) opts_.follow_replicas = false;
    if (rt_) {
        const metrics_scope ms(*rt_);
        reconnects_ = ms.counter(metric::reconnects_total,
                                 {{"endpoint", ep_.to_string()}, {"link", "pubsub"}});
    }
    if (opts_.follow_replicas || ep_.is_cluster()) {
        // The blocking ask runs on a tick worker, in this timer's own lane: a dead master delays
        // neither another object's watchdog or round nor anyone's callbacks.
        discovery_timer_ = std::make_unique<timer>(runtime_services(*rt_).timers(),
                                                   [this]() -> std::optional<timer::time_point> {
                                                       discover();
                                                       return discovery_due(opts_.replica_refresh);
                                                   });
    }
}

pubsub_mux::~pubsub_mux() {
    std::shared_ptr<subscriber> link;
    std::map<std::string, replica_link> replicas;
    std::map<std::string, shard_group> shards;
    {
        lock_guard l(mu_);
        closing_ = true;  // a discovery finishing now adds no link
        link = std::move(link_);
        replicas.swap(replicas_);
        shards.swap(shards_);
    }
    // The links first, outside mu_ (a handler running now takes mu_ to dispatch): the master
    // link's state handler arms the discovery timer, which must outlive it.
    replicas.clear();
    shards.clear();
    link.reset();
    discovery_timer_.reset();  // no tick (so no discovery) runs or will run
}

std::unique_ptr<subscriber> pubsub_mux::make_link(const endpoint& ep, bool master, up_flag up_to,
                                                  const subscriber_options& opts) {
    // The link's history for the log and the reconnect count: 0 never up, 1 up, 2 down.
    auto seen = std::make_shared<std::atomic<int>>(0);
    subscriber_options link_opts = opts;
    if (!link_opts.runtime) link_opts.runtime = rt_;  // this runtime's reader and dialer
    return std::make_unique<subscriber>(
        ep, [this](const pubsub_message& m) { dispatch(m); }, std::move(link_opts),
        [this, master, seen, up_to = std::move(up_to), where = ep.to_string()](bool up) {
            const int before = seen->exchange(up ? 1 : 2);
            if (rt_ && up && before == 2) {
                reconnects_.inc();
                runtime_services(*rt_).emit(
                    log_level::info, "signaling", "pub/sub link up again",
                    {{"endpoint", where}, {"role", master ? "master" : "replica"}});
            } else if (rt_ && !up && before == 1) {
                runtime_services(*rt_).emit(
                    log_level::warning, "signaling", "pub/sub link down",
                    {{"endpoint", where}, {"role", master ? "master" : "replica"}});
            }
            if (up_to) up_to->store(up);
            // A master that came back may have other replicas now (a failover, a restart); on
            // a cluster, a link that dropped may mean a failover, which moves the slot.
            if ((master && up) || (clustered() && !up)) refresh_replicas();
            link_state(up);
        });
}

subscriber& pubsub_mux::link_locked() {
    if (clustered())
        throw invalid_argument("pubsub_mux: a Redis Cluster endpoint has one link per shard");
    if (!link_) {
        link_ = make_link(ep_, true, master_up_, opts_.link);
        if (discovery_timer_) discovery_timer_->arm(discovery_due({}));
    }
    return *link_;
}

subscriber& pubsub_mux::link() {
    lock_guard l(mu_);
    return link_locked();
}

void pubsub_mux::subscribe_all(subscriber& s) {
    std::vector<std::string> chans, pats;
    for (const auto& [name, list] : channels_) chans.push_back(name);
    for (const auto& [name, list] : patterns_) pats.push_back(name);
    if (!chans.empty()) (void)s.subscribe(chans, std::chrono::milliseconds(0));
    if (!pats.empty()) (void)s.psubscribe(pats, std::chrono::milliseconds(0));
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
    if (pattern && clustered())
        throw invalid_argument(
            "pub/sub patterns are not available on a Redis Cluster endpoint (sharded pub/sub, "
            "which keeps a channel on its shard, has no patterns): listen on channels");
    lock_guard l(mu_);
    if (clustered()) {
        auto& list = channels_[e->name];
        if (list.empty()) {
            home_locked(e->name);
            // Not homed (no map yet, or its slot is unserved): the tick homes it soon.
            if (!home_.count(e->name)) refresh_replicas();
        }
        list.push_back(e);
        return listener(shared_from_this(), std::move(e));
    }
    auto& sub = link_locked();
    auto& list = (pattern ? patterns_ : channels_)[e->name];
    // Under mu_, like the UNSUBSCRIBE of the last listener: each subscriber sees the two in
    // the order the map changed.
    if (list.empty()) {
        auto send = [&](subscriber& s) {
            if (pattern)
                (void)s.psubscribe({e->name}, std::chrono::milliseconds(0));
            else
                (void)s.subscribe({e->name}, std::chrono::milliseconds(0));
        };
        send(sub);
        for (auto& [addr, r] : replicas_) send(*r.sub);
    }
    list.push_back(e);
    return listener(shared_from_this(), std::move(e));
}

void pubsub_mux::release(const std::shared_ptr<entry>& e) noexcept {
    {
        std::lock_guard c(e->call_mu);
        e->gone = true;
    }
    lock_guard l(mu_);
    auto& map = e->pattern ? patterns_ : channels_;
    auto it = map.find(e->name);
    if (it == map.end()) return;
    auto& list = it->second;
    list.erase(std::remove(list.begin(), list.end(), e), list.end());
    if (!list.empty()) return;
    map.erase(it);
    if (clustered()) {
        unhome_locked(e->name);  // an empty group is closed by the next rehome, off this thread
        return;
    }
    // Under mu_: a listen() of the same name either came before (then the list was not empty)
    // or comes after and subscribes again.
    auto drop = [&](subscriber& s) {
        try {
            if (e->pattern)
                s.punsubscribe({e->name});
            else
                s.unsubscribe({e->name});
        } catch (...) {}
    };
    if (link_) drop(*link_);
    for (auto& [addr, r] : replicas_) drop(*r.sub);
}

void pubsub_mux::add_replica(const endpoint& replica) {
    if (clustered())
        throw invalid_argument(
            "pubsub_mux: the replicas of a Redis Cluster's shards come from its slot map");
    const auto addr = pubsub_address_of(replica);
    lock_guard l(mu_);
    if (addr == pubsub_address_of(ep_) && !ep_.is_sentinel()) return;
    auto& r = replicas_[addr];
    r.given = true;
    if (r.sub) return;
    r.ep = replica;
    r.sub = make_link(replica, false, nullptr, opts_.link);
    subscribe_all(*r.sub);
}

std::vector<endpoint> pubsub_mux::replicas() const {
    lock_guard l(mu_);
    std::vector<endpoint> out;
    for (const auto& [addr, r] : replicas_) out.push_back(r.ep);
    for (const auto& [key, g] : shards_)
        for (const auto& [addr, r] : g.replicas) out.push_back(r->where());
    return out;
}

std::chrono::steady_clock::time_point pubsub_mux::discovery_due(
    std::chrono::milliseconds after) const {
    return deadline_after(after, runtime_services(*rt_).timers().clock().now());
}

void pubsub_mux::refresh_replicas() {
    if (discovery_timer_) discovery_timer_->arm(discovery_due({}));
}

void pubsub_mux::discover() noexcept {
    if (clustered()) {
        rehome(false);
        return;
    }
    endpoint ask = ep_;
    ask.connect_timeout = std::min(ask.connect_timeout, opts_.discovery_timeout);
    ask.command_timeout = std::min(ask.command_timeout, opts_.discovery_timeout);
    try {
        auto d = runtime_services::replicas_of(ask, rt_);
        if (d.refused.empty()) {
            discovery_refusal_logged_ = false;
            discovered(d.replicas);
        } else if (!std::exchange(discovery_refusal_logged_, true) && rt_) {
            // Refused, the replicas are unknown: the links keep what they have, as when the
            // master is unreachable. Logged once, not at every refresh.
            runtime_services(*rt_).emit(
                log_level::warning, "signaling",
                "replica discovery refused (ROLE and INFO): listening on the master only",
                {{"endpoint", ep_.to_string()}, {"error", d.refused}});
        }
    } catch (...) {
        // Master or sentinels unreachable now: the links keep what they have; the next
        // refresh asks again.
    }
}

void pubsub_mux::discovered(const std::vector<endpoint>& found) {
    std::vector<std::shared_ptr<subscriber>> gone;
    {
        lock_guard l(mu_);
        if (closing_) return;
        std::map<std::string, const endpoint*> now;
        for (const auto& ep : found) {
            // Discovered replicas carry the master's credentials and timeouts (ROLE and the
            // sentinels name only addresses).
            if (pubsub_address_of(ep) != pubsub_address_of(ep_) || ep_.is_sentinel())
                now[pubsub_address_of(ep)] = &ep;
        }
        for (auto it = replicas_.begin(); it != replicas_.end();) {
            if (!it->second.given && !now.count(it->first)) {
                gone.push_back(std::move(it->second.sub));
                it = replicas_.erase(it);
            } else {
                ++it;
            }
        }
        for (const auto& [addr, ep] : now) {
            auto& r = replicas_[addr];
            if (r.sub) continue;
            r.ep = *ep;
            r.sub = make_link(*ep, false, nullptr, opts_.link);
            subscribe_all(*r.sub);
        }
    }
    gone.clear();  // outside mu_: their handlers take it
}

void pubsub_mux::dispatch(const pubsub_message& m) {
    std::vector<std::shared_ptr<entry>> targets;
    {
        lock_guard l(mu_);
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
        lock_guard l(mu_);
        for (const auto* map : {&channels_, &patterns_})
            for (const auto& [name, list] : *map)
                targets.insert(targets.end(), list.begin(), list.end());
    }
    for (const auto& e : targets) {
        std::lock_guard c(e->call_mu);
        if (!e->gone && e->h.on_link) {
            try {
                e->h.on_link(up);
            } catch (...) {}
        }
    }
}

bool pubsub_mux::connected() const {
    lock_guard l(mu_);
    if (clustered()) {
        if (home_.size() != channels_.size()) return false;
        return std::all_of(shards_.begin(), shards_.end(),
                           [](const auto& g) { return g.second.master->connected(); });
    }
    return link_ && link_->connected();
}

std::size_t pubsub_mux::connected_links() const {
    lock_guard l(mu_);
    std::size_t n = link_ && link_->connected() ? 1 : 0;
    for (const auto& [addr, r] : replicas_)
        if (r.sub->connected()) ++n;
    for (const auto& [key, g] : shards_) {
        if (g.master->connected()) ++n;
        for (const auto& [addr, r] : g.replicas)
            if (r->connected()) ++n;
    }
    return n;
}

subscriber* pubsub_mux::readable_link() noexcept {
    if (clustered()) return nullptr;
    try {
        lock_guard l(mu_);
        return &link_locked();
    } catch (...) {
        return nullptr;
    }
}

std::shared_ptr<subscriber> pubsub_mux::link_of(const std::string& channel) {
    lock_guard l(mu_);
    if (!clustered()) {
        (void)link_locked();
        return link_;
    }
    auto h = home_.find(channel);
    if (h == home_.end()) return nullptr;
    auto g = shards_.find(h->second);
    return g == shards_.end() ? nullptr : g->second.master;
}

std::size_t pubsub_mux::interests() const {
    lock_guard l(mu_);
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

std::optional<std::string> pubsub_mux::listener::refusal() const {
    if (!entry_) return std::nullopt;
    if (mux_->clustered()) return mux_->refusal_clustered(*entry_);
    return subscriber_access::refusal(mux_->link(), entry_->pattern, entry_->name);
}

bool pubsub_mux::listener::wait_confirmed(std::chrono::milliseconds wait) const {
    if (!entry_) return false;
    if (confirm(wait)) return true;
    if (auto text = refusal(); text && is_permission_refusal(*text))
        throw_reply_error(*text, entry_->pattern ? "PSUBSCRIBE" : "SUBSCRIBE",
                          "pub/sub link to " + mux_->where().to_string());
    return false;
}

bool pubsub_mux::listener::confirm(std::chrono::milliseconds wait) const {
    if (mux_->clustered()) return mux_->confirm_clustered(*entry_, wait);
    const auto until = deadline_after(wait);
    auto on = [&](subscriber& s, std::chrono::milliseconds w) {
        return entry_->pattern ? s.psubscribe({entry_->name}, w) : s.subscribe({entry_->name}, w);
    };
    auto on_replica = [&] {
        lock_guard l(mux_->mu_);
        for (auto& [addr, r] : mux_->replicas_)
            if (on(*r.sub, std::chrono::milliseconds(0))) return true;
        return false;
    };
    auto& master = mux_->link();
    for (;;) {
        // The master link first, in short slices so that a replica's confirmation counts
        // while the master is down.
        const auto left = time_left<std::chrono::milliseconds>(until);
        if (on(master, std::min(left, std::chrono::milliseconds(5)))) return true;
        // Refused: asking again (on() re-sends the SUBSCRIBE) would only be refused again.
        if (refusal()) return false;
        // A master link that is up but slow to confirm (a paused server) is waited for: a
        // replica's confirmation alone would let a publish on the master go unheard.
        if (!mux_->master_up_->load() && on_replica()) return true;
        if (time_left<std::chrono::milliseconds>(until).count() <= 0) return false;
    }
}

bool pubsub_mux::listener::confirmed() const {
    return entry_ && confirm(std::chrono::milliseconds(0));
}

}  // namespace redcoord::detail
