#pragma once
/// @file
/// Hosts and clients on separate network namespaces, joined by veth pairs whose links a test
/// cuts and restores: network partitions between chosen clients and chosen Redis servers,
/// which one loopback interface cannot give.

#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/process.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord::testing {

/// A network of Linux network namespaces (`ip netns`, iproute2): each Redis host and each
/// client has its own, and every client is joined to every host by its own veth pair, so any
/// set of client-host links can be cut while the others carry on. Hosts may also be joined
/// to each other (replication, Sentinel) with link_hosts().
///
/// A cut link drops packets silently in both directions (each end's neighbour entry for the
/// other is pinned to an unused MAC address; interfaces and routes stay up, no reset is sent),
/// so a client sees what a partition looks like: connects and writes that time out.
/// Traffic shaping (netem) is not available on the machines this runs on; delay is made with
/// pauses (SIGSTOP) instead.
///
/// Addresses: link k is the /30 `10.77.<k / 64>.<(k % 64) * 4>`; its lower-numbered node has
/// `.1`, the other `.2`. Each host also has a service address, `10.78.<n / 250>.<n % 250 + 1>`
/// for node n, that every node linked to it routes to over their link: the one address by
/// which replicas, sentinels and clients all name a server (Sentinel hands its master's
/// address to everyone), and which a cut link silences like the link's own. Addresses exist
/// only inside this network's namespaces, so concurrent networks of other test processes do
/// not clash. The test process itself reaches each host through the host's Unix socket
/// (server_options::control_socket).
///
/// Names: every namespace is `rcnet<pid>-<n>-<node>`, unique to the process and the network.
/// The destructor deletes them (which deletes their links and ends every process still in
/// them: the hosts by PID first). A network created later sweeps the namespaces of processes
/// that no longer run (a test killed before its destructor), and only those.
///
/// Needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN): see unavailable_reason().
///
/// Thread-safety: none; drive it from one thread.
class local_network {
public:
    /// One client-host (or host-host) link, by node indices as add_client()/add_host() return.
    struct link {
        std::size_t a = 0;  ///< One end (a client or a host).
        std::size_t b = 0;  ///< The other end.
    };

    /// Why networks cannot be made here (not root; `ip` missing; namespaces refused), or
    /// nullopt when they can. Tests skip with this text: never a silent pass.
    [[nodiscard]] static std::optional<std::string> unavailable_reason();

    /// An empty network; sweeps leftovers of dead test processes first.
    /// @throws redcoord::error when namespaces cannot be made (see unavailable_reason()).
    local_network();
    /// Stops every host, then deletes every namespace of this network.
    ~local_network();
    local_network(const local_network&) = delete;
    local_network& operator=(const local_network&) = delete;

    /// Starts a redis-server in a new namespace, linked to every client so far (and to every
    /// client added later). `opts.launcher` runs inside the namespace (e.g. faketime);
    /// `opts.bind`, `opts.control_socket` are set by the network.
    /// @returns the host's node index.
    /// @throws redcoord::error when the namespace, a link or the server cannot be made.
    std::size_t add_host(server_options opts = {});
    /// Makes a client namespace linked to every host so far (and to every host added later).
    /// @returns the client's node index.
    std::size_t add_client();
    /// Links two hosts (a replica to its master, sentinels to the servers they watch).
    void link_hosts(std::size_t host_a, std::size_t host_b);

    /// Starts a replica of `master_host` in a new namespace, linked to it, to every other
    /// replica of it and to every client; it replicates from the master's service address
    /// and announces its own (`replica-announce-ip`), so sentinels and clients can reach it.
    /// @returns the replica's node index.
    /// @throws redcoord::error as add_host().
    std::size_t add_replica(std::size_t master_host, server_options opts = {});

    /// How the sentinels of add_sentinels() watch their master.
    struct sentinel_settings {
        std::string service = "redcoord";           ///< The monitored master's name.
        std::size_t quorum = 2;                     ///< Sentinels that must agree it is down.
        std::chrono::milliseconds down_after{500};  ///< `down-after-milliseconds`.
        std::chrono::milliseconds failover_timeout{2000};  ///< `failover-timeout`.
    };

    /// Starts `count` sentinels, each in its own namespace linked to every host so far, to
    /// each other and to every client, watching `master_host` and its replicas (known from
    /// the start, as are the other sentinels, so a failover needs no discovery first). Each
    /// announces its service address and listens on port 26379. Waits until every sentinel
    /// sees the master up, its replicas and the other sentinels.
    /// @returns their node indices.
    /// @throws redcoord::error when a sentinel cannot start or is not ready within 15 s.
    std::vector<std::size_t> add_sentinels(std::size_t master_host, std::size_t count,
                                           const sentinel_settings& settings);

    /// The host's service address (see the class comment).
    [[nodiscard]] std::string service_address(std::size_t host_node) const;
    /// A `redis-sentinel://` URL naming `sentinels` by their service addresses, for any
    /// client (clients are linked to every sentinel).
    [[nodiscard]] std::string sentinel_url(const std::vector<std::size_t>& sentinels,
                                           const std::string& service) const;
    /// The host the first sentinel of `sentinels` that answers names as `service`'s master
    /// (SENTINEL GET-MASTER-ADDR-BY-NAME, asked through its Unix socket); nullopt when none
    /// answers or the address is not a host of this network.
    [[nodiscard]] std::optional<std::size_t> sentinels_master(
        const std::vector<std::size_t>& sentinels, const std::string& service);

    /// The host's server (kill, pause, resume, restart, command through its Unix socket).
    [[nodiscard]] local_server& host(std::size_t host_node);
    /// The address of `to` on its link with `from` (nullopt when they are not linked).
    [[nodiscard]] std::optional<std::string> address(std::size_t from, std::size_t to) const;
    /// The endpoint by which `client` reaches `host_node` over their link.
    /// @throws redcoord::error when they are not linked.
    [[nodiscard]] redcoord::endpoint endpoint(std::size_t client, std::size_t host_node) const;
    /// The same as a URL (`redis://10.77.x.y:port`, with the password when one is set).
    [[nodiscard]] std::string url(std::size_t client, std::size_t host_node) const;
    /// The namespace of a node, e.g. for `ip netns exec`.
    [[nodiscard]] const std::string& namespace_of(std::size_t node) const;

    /// Starts `argv` in `client`'s namespace (`ip netns exec NS argv...`, which execs, so the
    /// process's PID is the program's: pause, resume and kill reach it directly).
    [[nodiscard]] process start(std::size_t client, std::vector<std::string> argv,
                                process_options opts = {});

    /// Cuts each link given (both directions); others keep their state.
    void partition(const std::vector<link>& links);
    /// Cuts every link of `node` (a host or client alone on its side).
    void isolate(std::size_t node);
    /// Restores every link.
    void heal();
    /// True when the link between `a` and `b` is up.
    [[nodiscard]] bool connected(std::size_t a, std::size_t b) const;

    /// Kills host `host_node` (SIGKILL), waits `after`, and starts it again on the same
    /// directory, port and links: the "delayed restart" of the Redlock page's crash-recovery
    /// discussion (a restart without persistence forgets every lock it held).
    void restart(std::size_t host_node,
                 std::chrono::milliseconds after = std::chrono::milliseconds(0));

private:
    struct node;
    struct wire;
    void make_link(std::size_t a, std::size_t b);
    void set_link(const wire& w, bool up);
    [[nodiscard]] const wire* find(std::size_t a, std::size_t b) const;
    std::size_t add_node(bool is_host);
    void start_server(std::size_t id, server_options opts);

    std::string prefix_;
    std::vector<std::unique_ptr<node>> nodes_;
    std::vector<wire> wires_;
};

}  // namespace redcoord::testing
REDCOORD_API_END
