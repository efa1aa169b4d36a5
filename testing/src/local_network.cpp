#include <redcoord/core/errors.hpp>
#include <redcoord/core/token.hpp>
#include <redcoord/testing/local_network.hpp>
#include <redcoord/testing/wait.hpp>

#include "sentinel_setup.hpp"

#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX kill
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace redcoord::testing {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view name_stem = "rcnet";

std::string read_all(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Runs `ip args...` to completion; its output becomes the error's text when it fails.
void ip(std::vector<std::string> args) {
    args.insert(args.begin(), "ip");
    static std::atomic<unsigned> calls{0};
    const fs::path out = fs::temp_directory_path() / ("rcnet-ip-" + std::to_string(::getpid()) +
                                                      "-" + std::to_string(calls++) + ".out");
    process_options po;
    po.output_file = out.string();
    int status = -1;
    {
        process p(args, po);
        status = p.wait();
    }
    if (status != 0) {
        std::string cmd;
        for (const auto& a : args) cmd += (cmd.empty() ? "" : " ") + a;
        const std::string text = read_all(out);
        std::error_code ec;
        fs::remove(out, ec);
        throw error("'" + cmd + "' failed (status " + std::to_string(status) + "): " + text);
    }
    std::error_code ec;
    fs::remove(out, ec);
}

// Deletes the namespaces of test processes that are gone (killed before their destructor
// ran). Live processes' networks, and anything not named by this harness, are left alone.
void sweep_leftovers() {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/run/netns", ec)) {
        const std::string name = e.path().filename().string();
        if (name.rfind(name_stem, 0) != 0) continue;
        const auto dash = name.find('-');
        if (dash == std::string::npos) continue;
        long pid = 0;
        try {
            pid = std::stol(name.substr(name_stem.size(), dash - name_stem.size()));
        } catch (const std::exception&) {
            continue;
        }
        if (pid <= 0 || (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)) {
            try {
                ip({"netns", "delete", name});
            } catch (const error&) {
                // Another sweeper got there first.
            }
        }
    }
}

std::string link_address(std::size_t link, bool lower_end) {
    const std::size_t third = link / 64, fourth = (link % 64) * 4 + (lower_end ? 1 : 2);
    return "10.77." + std::to_string(third) + "." + std::to_string(fourth);
}

}  // namespace

struct local_network::node {
    std::string ns;
    bool is_host = false;
    std::unique_ptr<local_server> server;
    std::optional<std::size_t> replica_of;  // the master it was started as a replica of
};

struct local_network::wire {
    std::size_t a = 0, b = 0;  // a < b
    std::size_t index = 0;     // its /30
    bool up = true;
};

std::optional<std::string> local_network::unavailable_reason() {
    if (::geteuid() != 0)
        return std::string(
            "network namespaces need root (CAP_SYS_ADMIN, CAP_NET_ADMIN); run the fault tests as "
            "root");
    const std::string probe = std::string(name_stem) + std::to_string(::getpid()) + "-probe";
    try {
        ip({"netns", "add", probe});
        ip({"netns", "delete", probe});
    } catch (const std::exception& e) {
        return std::string("cannot make network namespaces here: ") + e.what();
    }
    return std::nullopt;
}

local_network::local_network() {
    static std::atomic<int> counter{0};
    prefix_ =
        std::string(name_stem) + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-";
    sweep_leftovers();
}

local_network::~local_network() {
    for (auto& n : nodes_)
        if (n->server) n->server.reset();  // by PID, before its namespace goes
    for (auto& n : nodes_) {
        try {
            ip({"netns", "delete", n->ns});
        } catch (const std::exception&) {
            // Already gone; never throw from a destructor.
        }
    }
}

std::size_t local_network::add_node(bool is_host) {
    auto n = std::make_unique<node>();
    n->ns = prefix_ + (is_host ? "h" : "c") + std::to_string(nodes_.size());
    n->is_host = is_host;
    ip({"netns", "add", n->ns});
    nodes_.push_back(std::move(n));
    ip({"-n", nodes_.back()->ns, "link", "set", "lo", "up"});
    const std::size_t id = nodes_.size() - 1;
    // On lo, so it stays up whichever link a peer reaches it by (make_link adds the routes).
    if (is_host)
        ip({"-n", nodes_.back()->ns, "addr", "add", service_address(id) + "/32", "dev", "lo"});
    // Every client meets every host.
    for (std::size_t other = 0; other < id; ++other)
        if (nodes_[other]->is_host != is_host) make_link(other, id);
    return id;
}

void local_network::make_link(std::size_t a, std::size_t b) {
    if (a > b) std::swap(a, b);
    if (find(a, b)) return;
    wire w{a, b, wires_.size(), true};
    // Each end is made inside its namespace and named after the node at the other end, so
    // names never meet in the root namespace (where other test processes make theirs).
    const std::string end_a = "l" + std::to_string(b), end_b = "l" + std::to_string(a);
    ip({"link", "add", end_a, "netns", nodes_[a]->ns, "type", "veth", "peer", "name", end_b,
        "netns", nodes_[b]->ns});
    ip({"-n", nodes_[a]->ns, "addr", "add", link_address(w.index, true) + "/30", "dev", end_a});
    ip({"-n", nodes_[b]->ns, "addr", "add", link_address(w.index, false) + "/30", "dev", end_b});
    ip({"-n", nodes_[a]->ns, "link", "set", end_a, "up"});
    ip({"-n", nodes_[b]->ns, "link", "set", end_b, "up"});
    // Each end reaches the other's service address through this link's next hop, so cutting
    // the link (its neighbour entries) silences the service address too.
    if (nodes_[b]->is_host)
        ip({"-n", nodes_[a]->ns, "route", "add", service_address(b) + "/32", "via",
            link_address(w.index, false), "dev", end_a});
    if (nodes_[a]->is_host)
        ip({"-n", nodes_[b]->ns, "route", "add", service_address(a) + "/32", "via",
            link_address(w.index, true), "dev", end_b});
    wires_.push_back(w);
}

// A cut link keeps its interfaces and routes up: each end's neighbour entry for the other is
// pinned to a MAC address nobody has, so frames still leave and are dropped by the receiving
// end's address filter. Senders see silence, as across a real partition, not the instant
// "network unreachable" that setting an interface down gives. Healing drops the pinned
// entries; the next packet resolves the real address again (ARP).
void local_network::set_link(const wire& w, bool up) {
    static const std::string nobody = "02:00:5e:00:00:01";  // locally administered, unused
    const std::string addr_a = link_address(w.index, true), addr_b = link_address(w.index, false);
    const std::string dev_a = "l" + std::to_string(w.b), dev_b = "l" + std::to_string(w.a);
    if (!up) {
        ip({"-n", nodes_[w.a]->ns, "neigh", "replace", addr_b, "lladdr", nobody, "dev", dev_a,
            "nud", "permanent"});
        ip({"-n", nodes_[w.b]->ns, "neigh", "replace", addr_a, "lladdr", nobody, "dev", dev_b,
            "nud", "permanent"});
        return;
    }
    ip({"-n", nodes_[w.a]->ns, "neigh", "del", addr_b, "dev", dev_a});
    ip({"-n", nodes_[w.b]->ns, "neigh", "del", addr_a, "dev", dev_b});
}

const local_network::wire* local_network::find(std::size_t a, std::size_t b) const {
    if (a > b) std::swap(a, b);
    for (const auto& w : wires_)
        if (w.a == a && w.b == b) return &w;
    return nullptr;
}

void local_network::start_server(std::size_t id, server_options opts) {
    std::vector<std::string> launcher{"ip", "netns", "exec", nodes_[id]->ns};
    launcher.insert(launcher.end(), opts.launcher.begin(), opts.launcher.end());
    opts.launcher = std::move(launcher);
    opts.bind = "0.0.0.0";  // every address of its own namespace: its links only
    opts.control_socket = true;
    // A master that fails over becomes a replica; its new master must then name it by the
    // address everyone can reach, not the link it happens to connect from.
    if (!opts.sentinel) opts.config.emplace_back("replica-announce-ip", service_address(id));
    nodes_[id]->server = std::make_unique<local_server>(std::move(opts));
}

std::size_t local_network::add_host(server_options opts) {
    const std::size_t id = add_node(true);
    start_server(id, std::move(opts));
    return id;
}

std::size_t local_network::add_replica(std::size_t master_host, server_options opts) {
    const auto& m = host(master_host);
    if (opts.password.empty()) opts.password = m.options().password;
    if (!opts.tls) opts.tls = m.options().tls;
    const std::size_t id = add_node(true);
    make_link(id, master_host);
    // Siblings too: after a failover one of them is the others' master.
    for (std::size_t k = 0; k < nodes_.size(); ++k)
        if (k != id && nodes_[k]->replica_of == master_host) make_link(id, k);
    nodes_[id]->replica_of = master_host;
    opts.config.emplace_back("replicaof",
                             service_address(master_host) + " " + std::to_string(m.port()));
    start_server(id, std::move(opts));
    nodes_[id]->server->wait_synced();
    return id;
}

std::vector<std::size_t> local_network::add_sentinels(std::size_t master_host, std::size_t count,
                                                      const sentinel_settings& settings) {
    const auto& m = host(master_host);
    if (m.options().tls)
        throw invalid_argument("add_sentinels: TLS servers are not supported in a local_network");
    constexpr std::uint16_t port = 26379;  // alone in its namespace, a sentinel may take any
    std::vector<std::size_t> ids;
    std::vector<std::string> run_ids;
    for (std::size_t i = 0; i < count; ++i) {
        ids.push_back(add_node(true));
        run_ids.push_back(random_token());  // 40 hex characters, the format of a sentinel id
    }
    for (auto id : ids)
        for (std::size_t k = 0; k < nodes_.size(); ++k)
            if (k != id && nodes_[k]->is_host) make_link(id, k);
    const std::string& svc = settings.service;
    for (std::size_t i = 0; i < count; ++i) {
        detail::sentinel_setup st;
        st.service = svc;
        st.master = {service_address(master_host), m.port()};
        st.quorum = settings.quorum;
        st.down_after = settings.down_after;
        st.failover_timeout = settings.failover_timeout;
        st.auth_pass = m.options().password;
        st.my_id = run_ids[i];
        st.announce_ip = service_address(ids[i]);
        for (std::size_t k = 0; k < nodes_.size(); ++k)
            if (nodes_[k]->replica_of == master_host)
                st.replicas.push_back({service_address(k), nodes_[k]->server->port()});
        for (std::size_t j = 0; j < count; ++j)
            if (j != i) {
                // Named fields: GCC 12 at -O3 misreads a nested brace-init temporary here as
                // maybe-uninitialized (package-deb's Release build).
                detail::sentinel_setup::peer other;
                other.address = {service_address(ids[j]), port};
                other.id = run_ids[j];
                st.others.push_back(std::move(other));
            }
        server_options o;
        o.sentinel = true;
        o.port = port;
        o.tls.reset();
        o.config = detail::sentinel_directives(st);
        start_server(ids[i], std::move(o));
    }
    // Ready when each sentinel could authorise a failover (CKQUORUM) and sees every replica
    // usable.
    std::size_t expected = 0;
    for (const auto& n : nodes_) expected += n->replica_of == master_host;
    for (auto id : ids) {
        std::string last;
        const bool ready = eventually(
            [&] {
                try {
                    auto& s = *nodes_[id]->server;
                    (void)s.command({"SENTINEL", "CKQUORUM", svc});  // throws without a quorum
                    const auto up =
                        detail::usable_replicas(s.command({"SENTINEL", "REPLICAS", svc}));
                    last = std::to_string(up) + " of " + std::to_string(expected) + " replicas up";
                    return up == expected;
                } catch (const error& e) {
                    last = e.what();
                    return false;
                }
            },
            std::chrono::seconds(15), std::chrono::milliseconds(20));
        if (!ready) throw error("sentinel " + std::to_string(id) + " not ready: " + last);
    }
    return ids;
}

std::string local_network::service_address(std::size_t host_node) const {
    return "10.78." + std::to_string(host_node / 250) + "." + std::to_string(host_node % 250 + 1);
}

std::string local_network::sentinel_url(const std::vector<std::size_t>& sentinels,
                                        const std::string& service) const {
    std::string s = "redis-sentinel://";
    for (std::size_t i = 0; i < sentinels.size(); ++i) {
        const auto& n = *nodes_.at(sentinels[i]);
        if (!n.server || !n.server->options().sentinel)
            throw invalid_argument("node " + std::to_string(sentinels[i]) + " is not a sentinel");
        if (i) s += ',';
        s += service_address(sentinels[i]);
        s += ':';
        s += std::to_string(n.server->port());
    }
    return s + "/" + service;
}

std::optional<std::size_t> local_network::sentinels_master(
    const std::vector<std::size_t>& sentinels, const std::string& service) {
    for (auto id : sentinels) {
        try {
            const auto r = host(id).command({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", service});
            if (!r.is_array() || r.elements().empty()) continue;
            const std::string& addr = r.elements()[0].text();
            for (std::size_t k = 0; k < nodes_.size(); ++k)
                if (nodes_[k]->is_host && service_address(k) == addr) return k;
            return std::nullopt;
        } catch (const error&) {
            // Paused or cut: ask the next one.
        }
    }
    return std::nullopt;
}

std::size_t local_network::add_client() { return add_node(false); }

void local_network::link_hosts(std::size_t host_a, std::size_t host_b) {
    if (!nodes_.at(host_a)->is_host || !nodes_.at(host_b)->is_host || host_a == host_b)
        throw invalid_argument("link_hosts: two different hosts are needed");
    make_link(host_a, host_b);
}

local_server& local_network::host(std::size_t host_node) {
    auto& n = *nodes_.at(host_node);
    if (!n.server) throw invalid_argument("node " + std::to_string(host_node) + " is not a host");
    return *n.server;
}

std::optional<std::string> local_network::address(std::size_t from, std::size_t to) const {
    const wire* w = find(from, to);
    if (!w) return std::nullopt;
    return link_address(w->index, to == w->a);
}

redcoord::endpoint local_network::endpoint(std::size_t client, std::size_t host_node) const {
    const auto addr = address(client, host_node);
    const auto& n = *nodes_.at(host_node);
    if (!addr || !n.server)
        throw error("node " + std::to_string(client) + " has no link to host " +
                    std::to_string(host_node));
    redcoord::endpoint e;
    e.host = *addr;
    e.port = n.server->port();
    e.password = n.server->options().password;
    if (n.server->options().tls) {
        e.tls = n.server->options().tls->client;
        e.tls.enabled = true;
        // The test certificates name 127.0.0.1 and localhost, not the link's address.
        e.tls.server_name = "localhost";
    }
    return e;
}

std::string local_network::url(std::size_t client, std::size_t host_node) const {
    auto e = endpoint(client, host_node);
    const std::string password = e.password;
    e.password.clear();
    std::string s = e.to_string();
    if (!password.empty()) s.insert(s.find("://") + 3, ":" + password + "@");
    return s;
}

const std::string& local_network::namespace_of(std::size_t node) const {
    return nodes_.at(node)->ns;
}

process local_network::start(std::size_t client, std::vector<std::string> argv,
                             process_options opts) {
    argv.insert(argv.begin(), {"ip", "netns", "exec", nodes_.at(client)->ns});
    return process(std::move(argv), std::move(opts));
}

void local_network::partition(const std::vector<link>& links) {
    for (const auto& l : links) {
        const wire* w = find(l.a, l.b);
        if (!w)
            throw invalid_argument("partition: nodes " + std::to_string(l.a) + " and " +
                                   std::to_string(l.b) + " are not linked");
        if (!w->up) continue;
        set_link(*w, false);
        wires_[w->index].up = false;
    }
}

void local_network::isolate(std::size_t node_index) {
    std::vector<link> all;
    for (const auto& w : wires_)
        if (w.a == node_index || w.b == node_index) all.push_back({w.a, w.b});
    partition(all);
}

void local_network::heal() {
    for (auto& w : wires_) {
        if (w.up) continue;
        set_link(w, true);
        w.up = true;
    }
}

bool local_network::connected(std::size_t a, std::size_t b) const {
    const wire* w = find(a, b);
    return w && w->up;
}

void local_network::restart(std::size_t host_node, std::chrono::milliseconds after) {
    auto& s = host(host_node);
    s.kill();
    std::this_thread::sleep_for(after);
    s.restart();
}

}  // namespace redcoord::testing
