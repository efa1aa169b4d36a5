#include <redcoord/core/connection.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/hash_slot.hpp>
#include <redcoord/testing/local_cluster.hpp>

#include <redcoord/core/cluster.hpp>
#include <redcoord/testing/wait.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace redcoord::testing {

namespace {

using namespace std::chrono_literals;

// One command to a node with short timeouts, so a dead or paused node costs little: nullopt
// when it does not answer (or answers with an error).
std::optional<reply> ask(const local_server& s, const std::vector<std::string>& argv) {
    try {
        auto ep = s.endpoint();
        ep.connect_timeout = 300ms;
        ep.command_timeout = 500ms;
        connection c(ep);
        auto r = c.command(argv);
        if (r.is_error()) return std::nullopt;
        return r;
    } catch (const error&) {
        return std::nullopt;
    }
}

// Replicas that master `s` counts as online (INFO replication, `state=online`): done with
// their initial sync, so they acknowledge WAIT. ROLE lists a replica still being synced too.
std::size_t online_replicas(const local_server& s) {
    const auto r = ask(s, {"INFO", "replication"});
    if (!r) return 0;
    const std::string info = r->text();
    std::size_t n = 0;
    for (auto at = info.find("state=online"); at != std::string::npos;
         at = info.find("state=online", at + 1))
        ++n;
    return n;
}

// The slot map as node `s` sees it (CLUSTER SLOTS, read by core's parser).
std::optional<cluster_map> slots_seen_by(const local_server& s) {
    auto r = ask(s, {"CLUSTER", "SLOTS"});
    if (!r) return std::nullopt;
    try {
        return cluster_map::from_slots(*r, s.address());
    } catch (const protocol_error&) {
        return std::nullopt;
    }
}

// A slot the master listening on `port` serves in `m`, if any.
std::optional<std::uint16_t> first_slot_of(const cluster_map& m, std::uint16_t port) {
    for (const auto& shard : m.shards())
        if (shard.master.port == port && !shard.slots.empty()) return shard.slots.front().first;
    return std::nullopt;
}

// True when `a` and `b` name the same master for every slot.
bool same_routing(const cluster_map& a, const cluster_map& b) {
    for (std::uint32_t slot = 0; slot < cluster_slots; ++slot) {
        const auto* x = a.master_of(static_cast<std::uint16_t>(slot));
        const auto* y = b.master_of(static_cast<std::uint16_t>(slot));
        if ((x == nullptr) != (y == nullptr) || (x && *x != *y)) return false;
    }
    return true;
}

template <class Pred>
void wait_for(Pred done, std::chrono::milliseconds timeout, const std::string& what) {
    if (!eventually(done, timeout, 20ms)) throw error("local_cluster: " + what);
}

}  // namespace

local_cluster::local_cluster(cluster_options opts) : opts_(std::move(opts)) {
    if (opts_.masters == 0) throw invalid_argument("local_cluster needs at least one master");
    if (opts_.node_timeout <= std::chrono::milliseconds::zero())
        throw invalid_argument("local_cluster: node_timeout must be > 0");
    apply_tls_default(opts_.server);
    const std::size_t total = opts_.masters * (1 + opts_.replicas_per_master);
    std::vector<std::uint16_t> bus;
    for (std::size_t i = 0; i < total; ++i) {
        server_options o = opts_.server;
        bus.push_back(free_port());
        o.config.emplace_back("cluster-enabled", "yes");
        o.config.emplace_back("cluster-config-file", "nodes.conf");
        o.config.emplace_back("cluster-node-timeout", std::to_string(opts_.node_timeout.count()));
        o.config.emplace_back("cluster-port", std::to_string(bus.back()));
        // Replicas stay with the master they were given: tests rely on the layout.
        o.config.emplace_back("cluster-allow-replica-migration", "no");
        // With TLS the bus speaks it too, and the nodes announce their TLS port in the map.
        if (o.tls) o.config.emplace_back("tls-cluster", "yes");
        nodes_.push_back(std::make_unique<local_server>(std::move(o)));
        ids_.push_back(nodes_.back()->command({"CLUSTER", "MYID"}).text());
    }
    for (std::size_t m = 0; m < opts_.masters; ++m) {
        const auto lo = m * cluster_slots / opts_.masters;
        const auto hi = (m + 1) * cluster_slots / opts_.masters - 1;
        nodes_[m]->command({"CLUSTER", "ADDSLOTSRANGE", std::to_string(lo), std::to_string(hi)});
    }
    for (std::size_t i = 1; i < total; ++i)
        nodes_[i]->command({"CLUSTER", "MEET", "127.0.0.1", std::to_string(nodes_[0]->port()),
                            std::to_string(bus[0])});
    // Every node must know every other before a replica can name its master by id.
    wait_for(
        [&] {
            return std::all_of(nodes_.begin(), nodes_.end(), [&](const auto& n) {
                auto r = ask(*n, {"CLUSTER", "NODES"});
                if (!r) return false;
                const auto& t = r->text();
                return static_cast<std::size_t>(std::count(t.begin(), t.end(), '\n')) >= total;
            });
        },
        opts_.start_timeout, "the nodes did not all meet");
    for (std::size_t m = 0; m < opts_.masters; ++m)
        for (std::size_t r = 0; r < opts_.replicas_per_master; ++r) {
            const std::size_t i = opts_.masters + m * opts_.replicas_per_master + r;
            nodes_[i]->command({"CLUSTER", "REPLICATE", ids_[m]});
        }
    wait_healthy(opts_.start_timeout);
    // Replicas attached and in sync, so a failover right away has one to promote and a WAIT
    // right away is acknowledged.
    wait_for(
        [&] {
            for (std::size_t m = 0; m < opts_.masters; ++m)
                if (replicas_of(m).size() < opts_.replicas_per_master ||
                    online_replicas(*nodes_[m]) < opts_.replicas_per_master)
                    return false;
            return true;
        },
        opts_.start_timeout, "the replicas did not attach");
}

local_cluster::~local_cluster() = default;

local_server& local_cluster::node(std::size_t i) const { return *nodes_.at(i); }

std::vector<host_port> local_cluster::seeds() const {
    std::vector<host_port> s;
    for (const auto& n : nodes_) s.push_back(n->address());
    return s;
}

std::string local_cluster::url() const {
    // A cluster endpoint over every node, with the nodes' TLS options (as a query) if any.
    auto e = nodes_.front()->endpoint();
    e.password.clear();
    for (const auto& n : nodes_) e.cluster_nodes.push_back(n->address());
    std::string s = e.to_string();
    if (!opts_.server.password.empty())
        s.insert(s.find("://") + 3, ":" + opts_.server.password + "@");
    return s;
}

std::optional<std::size_t> local_cluster::index_of(std::uint16_t port) const {
    for (std::size_t i = 0; i < nodes_.size(); ++i)
        if (nodes_[i]->port() == port) return i;
    return std::nullopt;
}

std::optional<std::size_t> local_cluster::slot_owner(std::size_t asked, std::uint16_t slot) const {
    const auto m = slots_seen_by(*nodes_.at(asked));
    const host_port* master = m ? m->master_of(slot) : nullptr;
    if (!master) return std::nullopt;
    return index_of(master->port);
}

std::optional<std::size_t> local_cluster::master_of_slot(std::uint16_t slot) const {
    for (std::size_t i = 0; i < nodes_.size(); ++i)
        if (auto owner = slot_owner(i, slot)) return owner;
    return std::nullopt;
}

std::optional<std::size_t> local_cluster::master_of_key(std::string_view key) const {
    return master_of_slot(hash_slot(key));
}

std::size_t local_cluster::other_master(std::size_t i) const {
    for (std::size_t k = 0; k < nodes_.size(); ++k)
        if (k != i && is_master(k)) return k;
    throw error("local_cluster: no master besides node " + std::to_string(i));
}

std::string local_cluster::key_on(std::size_t master, std::string_view prefix) const {
    std::optional<cluster_map> m;
    for (const auto& n : nodes_)
        if ((m = slots_seen_by(*n))) break;
    if (!m) throw error("local_cluster: no node tells the slot map");
    for (std::uint64_t i = 0; i < 1'000'000; ++i) {
        std::string key(prefix);
        key += std::to_string(i);
        const host_port* owner = m->master_of(hash_slot(key));
        if (owner && index_of(owner->port) == master) return key;
    }
    throw error("local_cluster: node " + std::to_string(master) + " serves no slot");
}

std::vector<std::size_t> local_cluster::replicas_of(std::size_t i) const {
    std::vector<std::size_t> out;
    auto r = ask(*nodes_.at(i), {"ROLE"});
    if (!r || r->elements().at(0).text() != "master") return out;
    for (const auto& rep : r->elements().at(2).elements()) {
        const auto port = std::stoul(rep.elements().at(1).text());
        if (auto k = index_of(static_cast<std::uint16_t>(port))) out.push_back(*k);
    }
    return out;
}

bool local_cluster::is_master(std::size_t i) const {
    auto r = ask(*nodes_.at(i), {"ROLE"});
    return r && r->elements().at(0).text() == "master";
}

void local_cluster::failover(std::size_t replica, bool force, std::chrono::milliseconds timeout) {
    auto role = ask(*nodes_.at(replica), {"ROLE"});
    if (!role || role->elements().at(0).text() != "slave")
        throw error("local_cluster: node " + std::to_string(replica) + " is not a replica");
    std::vector<std::string> cmd{"CLUSTER", "FAILOVER"};
    if (force) cmd.emplace_back("FORCE");
    if (!ask(*nodes_[replica], cmd))
        throw error("local_cluster: node " + std::to_string(replica) + " refused CLUSTER FAILOVER");
    // One slot of the old master's, to see every node route it to the new one.
    const auto old_master = index_of(static_cast<std::uint16_t>(role->elements().at(2).integer()));
    std::optional<std::uint16_t> probe;
    if (auto m = slots_seen_by(*nodes_[replica]); m && old_master)
        probe = first_slot_of(*m, nodes_[*old_master]->port());
    wait_for(
        [&] {
            if (!is_master(replica)) return false;
            // A manual (not forced) failover needs the old master alive, and it is done only
            // when that master has turned itself into a replica: a slow PING must not let the
            // loop below skip the one node whose view still lags.
            if (!force && old_master && is_master(*old_master)) return false;
            if (!probe) return true;
            for (std::size_t k = 0; k < nodes_.size(); ++k) {
                const bool must_answer = !force && old_master && k == *old_master;
                if (!must_answer && !ask(*nodes_[k], {"PING"})) continue;  // dead or paused
                if (slot_owner(k, *probe) != replica) return false;
            }
            return true;
        },
        timeout, "node " + std::to_string(replica) + " did not take over");
}

std::size_t local_cluster::wait_promoted(std::size_t i, std::chrono::milliseconds timeout) {
    // A slot master `i` served, as a live node still remembers it.
    std::optional<std::uint16_t> probe;
    for (std::size_t k = 0; k < nodes_.size() && !probe; ++k) {
        if (k == i) continue;
        if (auto m = slots_seen_by(*nodes_[k])) probe = first_slot_of(*m, nodes_[i]->port());
    }
    if (!probe) throw error("local_cluster: node " + std::to_string(i) + " serves no slot");
    std::optional<std::size_t> promoted;
    wait_for(
        [&] {
            std::optional<std::size_t> seen;
            for (std::size_t k = 0; k < nodes_.size(); ++k) {
                if (k == i || !ask(*nodes_[k], {"PING"})) continue;
                const auto owner = slot_owner(k, *probe);
                if (!owner || *owner == i || (seen && *seen != *owner)) return false;
                seen = owner;
            }
            if (!seen || !is_master(*seen)) return false;
            promoted = seen;
            return true;
        },
        timeout, "no replica of node " + std::to_string(i) + " was promoted");
    return *promoted;
}

void local_cluster::begin_migration(std::uint16_t slot, std::size_t to) {
    const auto from = master_of_slot(slot);
    if (!from) throw error("local_cluster: slot " + std::to_string(slot) + " has no master");
    if (*from == to) throw invalid_argument("local_cluster: the slot is already on that node");
    const std::string s = std::to_string(slot);
    nodes_.at(to)->command({"CLUSTER", "SETSLOT", s, "IMPORTING", ids_.at(*from)});
    nodes_[*from]->command({"CLUSTER", "SETSLOT", s, "MIGRATING", ids_[to]});
    migrating_ = migration{slot, *from, to};
}

void local_cluster::finish_migration(std::uint16_t slot) {
    if (!migrating_ || migrating_->slot != slot)
        throw invalid_argument("local_cluster: slot " + std::to_string(slot) +
                               " is not being migrated");
    // Plain copies: clang 14 cannot capture structured bindings in the lambda below.
    const std::size_t from = migrating_->from, to = migrating_->to;
    const std::string slot_text = std::to_string(slot);
    auto& source = *nodes_[from];
    for (;;) {
        auto keys = source.command({"CLUSTER", "GETKEYSINSLOT", slot_text, "100"});
        if (keys.elements().empty()) break;
        std::vector<std::string> cmd{"MIGRATE", "127.0.0.1", std::to_string(nodes_[to]->port()),
                                     "",        "0",         "5000"};
        if (!opts_.server.password.empty()) {
            cmd.emplace_back("AUTH");
            cmd.emplace_back(opts_.server.password);
        }
        cmd.emplace_back("KEYS");
        for (const auto& k : keys.elements()) cmd.push_back(k.text());
        connection c(source.endpoint());
        (void)c.command(cmd);  // a refusal throws reply_error with the server's text
    }
    // The target first, then the source, then every other master (the specification's order).
    nodes_[to]->command({"CLUSTER", "SETSLOT", slot_text, "NODE", ids_[to]});
    source.command({"CLUSTER", "SETSLOT", slot_text, "NODE", ids_[to]});
    for (std::size_t k = 0; k < nodes_.size(); ++k)
        if (k != to && k != from && is_master(k))
            (void)ask(*nodes_[k], {"CLUSTER", "SETSLOT", slot_text, "NODE", ids_[to]});
    migrating_.reset();
    wait_for(
        [&] {
            for (std::size_t k = 0; k < nodes_.size(); ++k) {
                if (!ask(*nodes_[k], {"PING"})) continue;
                if (slot_owner(k, slot) != to) return false;
            }
            return true;
        },
        std::chrono::seconds(15), "slot " + slot_text + " did not settle on its new master");
}

void local_cluster::migrate_slot(std::uint16_t slot, std::size_t to) {
    begin_migration(slot, to);
    finish_migration(slot);
}

void local_cluster::wait_healthy(std::chrono::milliseconds timeout) const {
    wait_for(
        [&] {
            std::optional<cluster_map> agreed;
            for (const auto& n : nodes_) {
                if (!ask(*n, {"PING"})) continue;  // dead or paused
                auto info = ask(*n, {"CLUSTER", "INFO"});
                if (!info || info->text().find("cluster_state:ok") == std::string::npos)
                    return false;
                auto m = slots_seen_by(*n);
                if (!m) return false;
                if (!m->covers_all_slots()) return false;
                if (agreed && !same_routing(*agreed, *m)) return false;
                agreed = std::move(m);
            }
            return agreed.has_value();
        },
        timeout, "the cluster did not become healthy");
}

}  // namespace redcoord::testing
