// The pub/sub multiplexer on a Redis Cluster: sharded pub/sub, one group of links (the
// shard's master and each replica) per shard that has a wanted channel. Sources: redis.io
// "Sharded Pub/Sub", SSUBSCRIBE, SPUBLISH, and the Cluster specification's slot moves.
#include "cluster_nodes.hpp"
#include "pool_access.hpp"
#include "pubsub_mux_entry.hpp"
#include "runtime_services.hpp"

#include <redcoord/core/deadline.hpp>
#include <redcoord/core/detail/refusal.hpp>
#include <redcoord/core/detail/serial_executor.hpp>
#include <redcoord/core/detail/subscriber_access.hpp>
#include <redcoord/core/detail/timer_service.hpp>
#include <redcoord/core/hash_slot.hpp>
#include <redcoord/core/pool.hpp>

#include <algorithm>
#include <thread>

namespace redcoord::detail {

namespace {

using namespace std::chrono_literals;

// While something is unsettled (a group's master link down, a channel refused or not homed),
// the map is asked for this often; a failover's promotion is then followed within it.
constexpr std::chrono::milliseconds unsettled_refresh{200};
// The least time between two rehomes started by refusals (a stale map answers a
// resubscription with MOVED again until the router learns the move).
constexpr std::chrono::milliseconds refusal_spacing{100};

std::int64_t steady_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// A refusal that a move of the slot explains (MOVED, or the node dropping the channel), as
// opposed to one that asking again elsewhere cannot cure (NOPERM).
bool moved_refusal(const std::optional<std::string>& text) {
    return text && !is_permission_refusal(*text);
}

}  // namespace

subscriber_options pubsub_mux::shard_link_options() {
    subscriber_options o = opts_.link;
    o.sharded = true;
    // Every shard link is watched: a waiter cannot tell which of them to read itself.
    o.tuning.drain_interval = std::chrono::milliseconds(0);
    o.tuning.on_refused = [this] {
        refused_.store(true);
        const auto soon = std::chrono::steady_clock::time_point(
            std::chrono::nanoseconds(rehomed_ns_.load()) + refusal_spacing);
        discovery_timer_->arm(runtime_services(*rt_).timers().clock().from_steady(
            std::max(std::chrono::steady_clock::now(), soon)));
    };
    return o;
}

void pubsub_mux::home_locked(const std::string& channel) {
    if (!map_) return;
    const auto* shard = map_->shard_of(hash_slot(channel));
    if (!shard) return;
    const auto key = node_key(shard->master);
    auto& g = shards_[key];
    if (!g.master) {
        const auto opts = shard_link_options();
        g.master = make_link(ep_.with_address(shard->master), true, g.master_up, opts);
        for (const auto& r : shard->replicas)
            g.replicas[node_key(r)] = make_link(ep_.with_address(r), false, nullptr, opts);
    }
    g.channels.insert(channel);
    home_[channel] = key;
    (void)g.master->subscribe({channel}, 0ms);
    for (auto& [addr, r] : g.replicas) (void)r->subscribe({channel}, 0ms);
}

void pubsub_mux::unhome_locked(const std::string& channel) {
    auto h = home_.find(channel);
    if (h == home_.end()) return;
    auto g = shards_.find(h->second);
    home_.erase(h);
    if (g == shards_.end()) return;
    g->second.channels.erase(channel);
    try {
        g->second.master->unsubscribe({channel});
        for (auto& [addr, r] : g->second.replicas) r->unsubscribe({channel});
    } catch (...) {
        // Out of memory at worst: the subscription stays until the group closes.
    }
}

void pubsub_mux::shape_group_locked(shard_group& g, const cluster_shard& shard,
                                    retired_links& gone) {
    std::set<std::string> now;
    for (const auto& r : shard.replicas) now.insert(node_key(r));
    for (auto it = g.replicas.begin(); it != g.replicas.end();) {
        if (now.count(it->first)) {
            ++it;
            continue;
        }
        gone.push_back(std::move(it->second));
        it = g.replicas.erase(it);
    }
    std::vector<std::string> chans(g.channels.begin(), g.channels.end());
    for (const auto& r : shard.replicas) {
        auto& link = g.replicas[node_key(r)];
        if (link) continue;
        link = make_link(ep_.with_address(r), false, nullptr, shard_link_options());
        if (!chans.empty()) (void)link->subscribe(chans, 0ms);
    }
}

void pubsub_mux::rehome(bool fresh) noexcept {
    rehomed_ns_.store(steady_ns());
    try {
        bool want_fresh = refused_.exchange(false) || fresh;
        {
            lock_guard l(mu_);
            if (closing_) return;
            want_fresh = want_fresh || !map_ || home_.size() != channels_.size() ||
                         std::any_of(shards_.begin(), shards_.end(),
                                     [](const auto& g) { return !g.second.master_up->load(); });
        }
        std::shared_ptr<const cluster_map> m;
        try {
            // Here, not in the constructor: the runtime builds this mux under the lock that
            // pool() takes.
            if (!cluster_pool_) cluster_pool_ = runtime_services(*rt_).pool(ep_);
            m = want_fresh ? pool_access::fresh_slot_map(*cluster_pool_)
                           : cluster_pool_->slot_map();
        } catch (...) {
            // No node answers now: the links keep what they have; asked again soon.
        }
        retired_links gone;
        std::vector<std::string> moved;
        bool unsettled = false;
        {
            lock_guard l(mu_);
            if (closing_) return;
            if (m) map_ = m;
            if (map_) {
                for (const auto& [name, list] : channels_) {
                    const auto* shard = map_->shard_of(hash_slot(name));
                    const std::string want = shard ? node_key(shard->master) : std::string();
                    auto h = home_.find(name);
                    if (h != home_.end() && h->second == want) {
                        auto g = shards_.find(want);
                        if (g == shards_.end() || !moved_refusal(subscriber_access::refusal(
                                                      *g->second.master, false, name)))
                            continue;
                    }
                    unhome_locked(name);
                    home_locked(name);
                    if (home_.count(name)) moved.push_back(name);
                }
                for (const auto& shard : map_->shards()) {
                    auto g = shards_.find(node_key(shard.master));
                    if (g != shards_.end()) shape_group_locked(g->second, shard, gone);
                }
            }
            for (auto it = shards_.begin(); it != shards_.end();) {
                if (!it->second.channels.empty()) {
                    unsettled = unsettled || !it->second.master_up->load();
                    ++it;
                    continue;
                }
                gone.push_back(std::move(it->second.master));
                for (auto& [addr, r] : it->second.replicas) gone.push_back(std::move(r));
                it = shards_.erase(it);
            }
            unsettled = unsettled || !map_ || home_.size() != channels_.size();
        }
        gone.clear();  // outside mu_: their handlers take it
        relinked(moved);
        const auto next =
            discovery_due(unsettled || refused_.load() ? unsettled_refresh : opts_.replica_refresh);
        // Under mu_: the destructor sets closing_ under it before it resets the timer.
        lock_guard l(mu_);
        if (!closing_) discovery_timer_->arm(next);
    } catch (...) {
        // Out of memory: the next tick tries again.
    }
}

void pubsub_mux::relinked(const std::vector<std::string>& names) {
    if (names.empty()) return;
    std::vector<std::shared_ptr<entry>> targets;
    {
        lock_guard l(mu_);
        for (const auto& n : names)
            if (auto it = channels_.find(n); it != channels_.end())
                targets.insert(targets.end(), it->second.begin(), it->second.end());
    }
    // A moved channel missed what was published while it moved: its listeners re-check.
    for (const auto& e : targets) {
        std::lock_guard c(e->call_mu);
        if (!e->gone && e->h.on_link) {
            try {
                e->h.on_link(true);
            } catch (...) {}
        }
    }
}

std::optional<std::string> pubsub_mux::refusal_clustered(const entry& e) {
    std::shared_ptr<subscriber> master;
    {
        lock_guard l(mu_);
        auto h = home_.find(e.name);
        if (h == home_.end()) return std::nullopt;
        auto g = shards_.find(h->second);
        if (g == shards_.end()) return std::nullopt;
        master = g->second.master;
    }
    return subscriber_access::refusal(*master, false, e.name);
}

bool pubsub_mux::confirm_clustered(const entry& e, std::chrono::milliseconds wait) {
    const auto until = deadline_after(wait);
    for (;;) {
        std::shared_ptr<subscriber> master;
        std::vector<std::shared_ptr<subscriber>> replicas;
        bool master_up = false;
        {
            lock_guard l(mu_);
            if (auto h = home_.find(e.name); h != home_.end()) {
                if (auto g = shards_.find(h->second); g != shards_.end()) {
                    master = g->second.master;
                    master_up = g->second.master_up->load();
                    for (auto& [addr, r] : g->second.replicas) replicas.push_back(r);
                }
            }
        }
        const auto slice = std::min(time_left<std::chrono::milliseconds>(until), 5ms);
        // A refused channel is not asked for again here: the rehome moves it (asking the
        // same node again would only be refused again).
        if (master && !subscriber_access::refusal(*master, false, e.name)) {
            if (master->subscribe({e.name}, slice)) return true;
            // Only while the master link is down does a replica's confirmation count: an
            // SPUBLISH on a live master must reach this listener through the master link too.
            if (!master_up)
                for (auto& r : replicas)
                    if (!subscriber_access::refusal(*r, false, e.name) &&
                        r->subscribe({e.name}, 0ms))
                        return true;
        } else if (slice.count() > 0) {
            std::this_thread::sleep_for(slice);
        }
        if (time_left<std::chrono::milliseconds>(until).count() <= 0) return false;
    }
}

}  // namespace redcoord::detail
