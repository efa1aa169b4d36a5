#include <redcoord/core/cluster.hpp>
#include <redcoord/core/errors.hpp>

#include <algorithm>
#include <charconv>
#include <limits>

namespace redcoord {

namespace {

[[noreturn]] void bad_shape(std::string_view what) {
    throw protocol_error("unexpected cluster topology reply: " + std::string(what));
}

const std::vector<reply>& array_of(const reply& r, std::string_view what) {
    if (!r.is_array()) bad_shape(std::string(what) + " is not an array");
    return r.elements();
}

std::uint16_t slot_of(const reply& r) {
    if (!r.is_integer() || r.integer() < 0 || r.integer() >= cluster_slots)
        bad_shape("slot out of range");
    return static_cast<std::uint16_t>(r.integer());
}

std::uint16_t port_of(const reply& r) {
    std::int64_t v = -1;
    if (r.is_integer()) {
        v = r.integer();
    } else if (r.is_string()) {
        const auto& t = r.text();
        if (std::from_chars(t.data(), t.data() + t.size(), v).ec != std::errc{}) v = -1;
    }
    if (v < 0 || v > std::numeric_limits<std::uint16_t>::max()) bad_shape("port out of range");
    return static_cast<std::uint16_t>(v);
}

// A flat RESP2 map [k1, v1, k2, v2, ...]: the value of `key`, or nullptr.
const reply* field(const std::vector<reply>& flat, std::string_view key) {
    for (std::size_t i = 0; i + 1 < flat.size(); i += 2)
        if (flat[i].is_string() || flat[i].is_status())
            if (flat[i].text() == key) return &flat[i + 1];
    return nullptr;
}

std::string text_field(const std::vector<reply>& flat, std::string_view key) {
    const reply* v = field(flat, key);
    return v && (v->is_string() || v->is_status()) ? v->text() : std::string();
}

// An announced address: "?" or empty means "the node you asked" (the node does not know its
// own address yet).
std::string host_or(const std::string& announced, const host_port& asked) {
    return announced.empty() || announced == "?" ? asked.host : announced;
}

}  // namespace

cluster_map::cluster_map() : owner_(cluster_slots, -1) {}

void cluster_map::index() {
    std::fill(owner_.begin(), owner_.end(), std::int16_t{-1});
    for (std::size_t i = 0; i < shards_.size(); ++i)
        for (const auto& r : shards_[i].slots)
            for (std::uint32_t s = r.first; s <= r.last; ++s)
                owner_[s] = static_cast<std::int16_t>(i);
}

cluster_map cluster_map::from_shards(const reply& r, const host_port& asked, bool tls) {
    cluster_map m;
    for (const auto& shard : array_of(r, "CLUSTER SHARDS")) {
        const auto& sf = array_of(shard, "a shard");
        const reply* slots = field(sf, "slots");
        const reply* nodes = field(sf, "nodes");
        if (!slots || !nodes) bad_shape("a shard without slots or nodes");
        cluster_shard out;
        const auto& flat = array_of(*slots, "slots");
        if (flat.size() % 2) bad_shape("odd slot list");
        for (std::size_t i = 0; i < flat.size(); i += 2) {
            slot_range range{slot_of(flat[i]), slot_of(flat[i + 1])};
            if (range.first > range.last) bad_shape("slot range ends before it starts");
            out.slots.push_back(range);
        }
        if (out.slots.empty()) continue;
        bool master_online = false;
        bool have_master = false;
        for (const auto& node : array_of(*nodes, "nodes")) {
            const auto& nf = array_of(node, "a node");
            const reply* port = field(nf, tls ? "tls-port" : "port");
            if (!port) continue;  // e.g. a plaintext port on a TLS-only node
            std::string host = text_field(nf, "endpoint");
            if (host.empty() || host == "?") host = text_field(nf, "ip");
            const host_port hp{host_or(host, asked), port_of(*port)};
            const bool online = text_field(nf, "health") == "online";
            const auto role = text_field(nf, "role");
            if (role == "master") {
                // An old master that failed stays listed until forgotten: prefer the live one.
                if (!have_master || (online && !master_online)) {
                    out.master = hp;
                    master_online = online;
                    have_master = true;
                }
            } else if (role == "replica" && text_field(nf, "health") != "failed") {
                // Not "online" only: Redis 7.0 reports a replica "loading" until its
                // replication offset moves past 0, which on an idle shard is never.
                out.replicas.push_back(hp);
            }
        }
        if (!have_master) bad_shape("a shard without a master");
        m.shards_.push_back(std::move(out));
    }
    m.index();
    return m;
}

cluster_map cluster_map::from_slots(const reply& r, const host_port& asked) {
    cluster_map m;
    for (const auto& range : array_of(r, "CLUSTER SLOTS")) {
        const auto& e = array_of(range, "a slot range");
        if (e.size() < 3) bad_shape("a slot range without a master");
        slot_range sr{slot_of(e[0]), slot_of(e[1])};
        if (sr.first > sr.last) bad_shape("slot range ends before it starts");
        auto node_of = [&](const reply& n) {
            const auto& nf = array_of(n, "a node");
            if (nf.size() < 2 || !nf[0].is_string()) bad_shape("a node without an address");
            return host_port{host_or(nf[0].text(), asked), port_of(nf[1])};
        };
        const host_port master = node_of(e[2]);
        // Ranges of one master become one shard.
        auto it = std::find_if(m.shards_.begin(), m.shards_.end(),
                               [&](const cluster_shard& s) { return s.master == master; });
        if (it == m.shards_.end()) {
            cluster_shard s;
            s.master = master;
            for (std::size_t i = 3; i < e.size(); ++i) s.replicas.push_back(node_of(e[i]));
            m.shards_.push_back(std::move(s));
            it = std::prev(m.shards_.end());
        }
        it->slots.push_back(sr);
    }
    m.index();
    return m;
}

const cluster_shard* cluster_map::shard_of(std::uint16_t slot) const noexcept {
    if (slot >= owner_.size() || owner_[slot] < 0) return nullptr;
    return &shards_[static_cast<std::size_t>(owner_[slot])];
}

const host_port* cluster_map::master_of(std::uint16_t slot) const noexcept {
    const auto* s = shard_of(slot);
    return s ? &s->master : nullptr;
}

bool cluster_map::covers_all_slots() const noexcept {
    return std::none_of(owner_.begin(), owner_.end(), [](std::int16_t o) { return o < 0; });
}

void cluster_map::move_slot(std::uint16_t slot, const host_port& to) {
    if (slot >= cluster_slots) return;
    auto it = std::find_if(shards_.begin(), shards_.end(),
                           [&](const cluster_shard& s) { return s.master == to; });
    if (it == shards_.end()) {
        cluster_shard s;
        s.master = to;
        shards_.push_back(std::move(s));
        it = std::prev(shards_.end());
    }
    // Ranges are descriptive (shards()); routing reads owner_, which the next full refresh
    // rebuilds from the cluster's own view.
    it->slots.push_back({slot, slot});
    owner_[slot] = static_cast<std::int16_t>(it - shards_.begin());
}

std::optional<cluster_redirect> parse_redirect(std::string_view t) {
    cluster_redirect r;
    if (t.rfind("MOVED ", 0) == 0) {
        t.remove_prefix(6);
    } else if (t.rfind("ASK ", 0) == 0) {
        r.ask = true;
        t.remove_prefix(4);
    } else {
        return std::nullopt;
    }
    const auto space = t.find(' ');
    if (space == std::string_view::npos) return std::nullopt;
    unsigned slot = 0;
    const auto slot_text = t.substr(0, space);
    if (std::from_chars(slot_text.data(), slot_text.data() + slot_text.size(), slot).ec !=
            std::errc{} ||
        slot >= cluster_slots)
        return std::nullopt;
    r.slot = static_cast<std::uint16_t>(slot);
    auto address = t.substr(space + 1);
    const auto colon = address.rfind(':');
    if (colon == std::string_view::npos) return std::nullopt;
    unsigned port = 0;
    const auto port_text = address.substr(colon + 1);
    if (port_text.empty() ||
        std::from_chars(port_text.data(), port_text.data() + port_text.size(), port).ec !=
            std::errc{} ||
        port == 0 || port > 65535)
        return std::nullopt;
    r.to = {std::string(address.substr(0, colon)), static_cast<std::uint16_t>(port)};
    return r;
}

}  // namespace redcoord
