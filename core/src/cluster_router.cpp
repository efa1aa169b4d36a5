#include "cluster_router.hpp"

#include "pool_access.hpp"

#include <redcoord/core/detail/refusal.hpp>
#include <redcoord/core/errors.hpp>

#include <algorithm>
#include <thread>

namespace redcoord::detail {

namespace {

std::chrono::milliseconds left_until(std::chrono::steady_clock::time_point deadline) {
    return std::max(
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()),
        std::chrono::milliseconds(1));
}

}  // namespace

cluster_router::cluster_router(endpoint ep, pool_options opts,
                               std::shared_ptr<redcoord::runtime> rt)
    : ep_(std::move(ep)), opts_(opts), rt_(std::move(rt)) {}

connection_pool& cluster_router::node_pool(const host_port& node) {
    std::lock_guard lk(mu_);
    auto& p = nodes_[node_key(node)];
    if (!p) {
        auto node_ep = ep_.with_address(node);
        p = std::make_shared<connection_pool>(node_ep, opts_, rt_);
        std::weak_ptr<redirect_follower> self = weak_from_this();
        pool_access::set_cluster_node(
            *p,
            [node_ep, self](std::chrono::milliseconds t) {
                auto c = std::make_unique<connection>(open_connection(node_ep, t));
                connection_access::get(*c).cluster = self;
                connection_access::get(*c).cluster_node = true;
                return c;
            },
            [weak = weak_from_this(), node] {
                if (auto r = weak.lock()) r->broken(node);
            });
    }
    return *p;
}

pooled_connection cluster_router::borrow_node(const host_port& node,
                                              std::chrono::milliseconds wait) {
    try {
        return node_pool(node).borrow(wait);
    } catch (const connection_error&) {
        broken(node);
        throw;
    } catch (const timeout_error&) {
        broken(node);
        throw;
    }
}

pooled_connection cluster_router::borrow(std::optional<std::uint16_t> slot,
                                         std::chrono::milliseconds wait) {
    auto m = map();
    host_port target;
    if (slot) {
        const host_port* master = m->master_of(*slot);
        if (!master) {
            refresh(true);
            m = map();
            master = m->master_of(*slot);
        }
        if (!master)
            throw cluster_unavailable("no master of " + ep_.to_string() + " serves hash slot " +
                                      std::to_string(*slot));
        target = *master;
    } else {
        if (m->shards().empty())
            throw cluster_unavailable("no master of " + ep_.to_string() + " serves any slot");
        // Keyless calls go to the first master; a MOVED, if any, is followed.
        target = m->shards().front().master;
    }
    return borrow_node(target, wait);
}

std::shared_ptr<const cluster_map> cluster_router::map() {
    const auto due = [this](clock::time_point now) {
        return !map_ || (stale_ && now - asked_at_ >= refresh_spacing) ||
               now - asked_at_ >= refresh_interval;
    };
    {
        std::lock_guard lk(mu_);
        if (!due(clock::now())) return map_;
    }
    refresh(false);
    std::lock_guard lk(mu_);
    if (!map_)
        throw cluster_unavailable("no node of " + ep_.to_string() + " could tell the slot map");
    return map_;
}

std::optional<cluster_map> cluster_router::ask(const host_port& node) {
    auto c = node_pool(node).borrow(ep_.connect_timeout);
    try {
        return cluster_map::from_shards(c->command({"CLUSTER", "SHARDS"}), node, ep_.tls.enabled);
    } catch (const reply_error& e) {
        const std::string_view t = e.what();
        if (t.find("cluster support disabled") != std::string_view::npos)
            throw invalid_argument(node_key(node) +
                                   " is not a cluster node (cluster support is "
                                   "disabled): use redis:// for one server");
        // Before Redis 7.0 there is no CLUSTER SHARDS.
        if (t.find("nknown subcommand") == std::string_view::npos) throw;
    }
    return cluster_map::from_slots(c->command({"CLUSTER", "SLOTS"}), node);
}

void cluster_router::refresh(bool force) {
    std::unique_lock one(refresh_mu_, std::defer_lock);
    std::vector<host_port> order;
    {
        std::unique_lock lk(mu_);
        const bool have = map_ != nullptr;
        lk.unlock();
        // With a map in hand, callers go on with it while another thread asks.
        if (have) {
            if (!one.try_lock()) return;
        } else {
            one.lock();
        }
        lk.lock();
        const auto now = clock::now();
        if (map_ && now - asked_at_ < refresh_spacing) return;
        if (map_ && !force && !stale_ && now - asked_at_ < refresh_interval) return;
        asked_at_ = now;
        // Masters first (they know the newest epoch), then replicas and the seeds; nodes whose
        // link broke lately last.
        if (map_) {
            for (const auto& s : map_->shards()) order.push_back(s.master);
            for (const auto& s : map_->shards())
                order.insert(order.end(), s.replicas.begin(), s.replicas.end());
        }
        order.insert(order.end(), ep_.cluster_nodes.begin(), ep_.cluster_nodes.end());
        std::vector<host_port> unique;
        for (auto& n : order)
            if (std::find(unique.begin(), unique.end(), n) == unique.end()) unique.push_back(n);
        std::stable_partition(unique.begin(), unique.end(), [&](const host_port& n) {
            auto f = failed_at_.find(node_key(n));
            return f == failed_at_.end() || now - f->second > std::chrono::seconds(2);
        });
        order = std::move(unique);
    }
    std::string last = "no node answered";
    for (const auto& node : order) {
        try {
            auto m = ask(node);
            if (!m || m->shards().empty()) {
                last = node_key(node) + " serves no slots yet";
                continue;
            }
            std::lock_guard lk(mu_);
            map_ = std::make_shared<const cluster_map>(std::move(*m));
            stale_ = false;
            return;
        } catch (const invalid_argument&) {
            throw;
        } catch (const auth_error&) {
            throw;
        } catch (const protocol_error&) {
            throw;
        } catch (const std::exception& e) {
            last = e.what();
            broken(node);
        }
    }
    std::lock_guard lk(mu_);
    if (!map_)
        throw cluster_unavailable("no node of " + ep_.to_string() +
                                  " could tell the slot map: " + last);
}

void cluster_router::moved(std::uint16_t slot, const host_port& to) {
    std::lock_guard lk(mu_);
    if (map_) {
        auto next = std::make_shared<cluster_map>(*map_);
        next->move_slot(slot, to);
        map_ = std::move(next);
    }
    // One slot moved is often many (a resharding, a failover): ask for the whole map soon.
    stale_ = true;
}

void cluster_router::broken(const host_port& node) noexcept {
    try {
        std::lock_guard lk(mu_);
        stale_ = true;
        failed_at_[node_key(node)] = clock::now();
    } catch (...) {}
}

std::optional<reply> cluster_router::follow(connection::impl& from, const reply& r,
                                            std::chrono::milliseconds timeout,
                                            std::span<const std::string_view> argv) {
    if (from.in_multi) return std::nullopt;  // queued in a transaction: not ours to re-send
    const auto budget = timeout.count() > 0           ? timeout
                        : ep_.command_timeout.count() ? ep_.command_timeout
                                                      : std::chrono::milliseconds(2000);
    const auto deadline = clock::now() + budget;
    pooled_connection lease;
    connection::impl* on = &from;
    reply now = r;
    auto backoff = std::chrono::milliseconds(5);
    int hops = 0;
    while (now.is_error()) {
        const std::string text = now.text();
        if (auto rd = parse_redirect(text)) {
            // A loop of redirections (a map that keeps changing): report the last one.
            if (++hops > 5) return now;
            host_port to = rd->to;
            if (to.host.empty()) to.host = on->ep.host;
            if (!rd->ask) moved(rd->slot, to);
            auto next = borrow_node(to, left_until(deadline));
            lease = std::move(next);
            on = &connection_access::get(*lease);
            on->set_timeout(timeout);
            if (rd->ask) {
                // ASKING lets the importing node serve the next command for the slot.
                const std::string_view asking[] = {"ASKING"};
                on->append(asking);
                on->append(argv);
                reply ok = on->read_reply();
                now = on->read_reply();
                if (ok.is_error()) return ok;
            } else {
                on->append(argv);
                now = on->read_reply();
            }
        } else if (error_code_is(text, "TRYAGAIN") || error_code_is(text, "CLUSTERDOWN")) {
            if (error_code_is(text, "CLUSTERDOWN")) broken({on->ep.host, on->ep.port});
            if (clock::now() + backoff >= deadline)
                throw cluster_unavailable(ep_.to_string() + " refused " + std::string(argv[0]) +
                                          " until its deadline: " + text);
            std::this_thread::sleep_for(backoff);
            backoff = std::min(backoff * 2, std::chrono::milliseconds(100));
            on->set_timeout(timeout);
            on->append(argv);
            now = on->read_reply();
        } else {
            // The node that answered has not cached the script (a promoted replica, an
            // importing master): the caller re-sends it as EVAL, which must not be taken for
            // EVALSHA again because the first node knew the script.
            if (on != &from && text.rfind("NOSCRIPT", 0) == 0) from.known_scripts.clear();
            return now;
        }
    }
    return now;
}

void cluster_router::seen(const connection::impl& from, const reply& r) noexcept {
    try {
        const auto& text = r.text();
        if (auto rd = parse_redirect(text)) {
            if (!rd->ask) {
                host_port to = rd->to;
                if (to.host.empty()) to.host = from.ep.host;
                moved(rd->slot, to);
            }
        } else if (error_code_is(text, "CLUSTERDOWN")) {
            broken({from.ep.host, from.ep.port});
        }
    } catch (...) {}
}

pool_stats cluster_router::stats() const {
    std::vector<std::shared_ptr<connection_pool>> pools;
    {
        std::lock_guard lk(mu_);
        for (const auto& [k, p] : nodes_) pools.push_back(p);
    }
    pool_stats sum;
    for (const auto& p : pools) {
        const auto s = p->stats();
        sum.in_use += s.in_use;
        sum.idle += s.idle;
        sum.created += s.created;
        sum.discarded += s.discarded;
        sum.trimmed += s.trimmed;
        sum.waits += s.waits;
        sum.errors += s.errors;
    }
    return sum;
}

void cluster_router::clear_idle() noexcept {
    std::vector<std::shared_ptr<connection_pool>> pools;
    try {
        std::lock_guard lk(mu_);
        for (const auto& [k, p] : nodes_) pools.push_back(p);
    } catch (...) {
        return;
    }
    for (const auto& p : pools) p->clear_idle();
}

}  // namespace redcoord::detail
