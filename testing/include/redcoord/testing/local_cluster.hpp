#pragma once
/// @file
/// A Redis Cluster of real redis-server processes on loopback ports, with the faults cluster
/// tests need: kill, pause, restart, a manual failover and a slot migration.

#include <redcoord/core/export.hpp>
#include <redcoord/core/reply.hpp>
#include <redcoord/testing/local_server.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord::testing {

/// Options of local_cluster.
struct cluster_options {
    std::size_t masters = 3;              ///< Masters; slots are split evenly among them. >= 1.
    std::size_t replicas_per_master = 1;  ///< Replicas of each master.
    /// `cluster-node-timeout` (milliseconds): how long a silent node takes to be marked failed,
    /// and so how soon its replica is promoted. Must be > 0.
    std::chrono::milliseconds node_timeout{1000};
    /// Options of every node (password, persistence, launcher, TLS). Its `config` gets the
    /// cluster directives added; with TLS (given, or REDCOORD_TEST_TLS=1) the cluster bus and
    /// replication speak it too (`tls-cluster yes`), and url() is a `rediss-cluster://` URL.
    server_options server{};
    /// How long the constructor waits for the cluster to be healthy.
    std::chrono::milliseconds start_timeout{30000};
};

/// A Redis Cluster: `masters` masters with `replicas_per_master` replicas each, every one a
/// redis-server with `cluster-enabled yes` in its own temporary directory on a free loopback
/// port (its cluster bus on a second free port). The constructor assigns slot ranges by
/// CLUSTER ADDSLOTSRANGE, joins the nodes by CLUSTER MEET, attaches replicas by CLUSTER
/// REPLICATE and waits until every node reports `cluster_state:ok` and agrees on the slot
/// map. Node indices are stable: nodes 0..masters-1 start as masters, then the replicas of
/// master 0, master 1, ...; roles move with failovers, indices do not.
///
/// @par Thread safety
/// None; drive it from one thread.
///
/// @par Errors
/// The constructor throws invalid_argument for bad options and redcoord::error when a node
/// does not start or the cluster is not healthy in time; the fault helpers throw
/// redcoord::error when the cluster does not reach the expected state in time. The destructor
/// never throws.
///
/// @par Cost
/// masters x (1 + replicas_per_master) redis-server processes.
class local_cluster {
public:
    /// Starts and joins the cluster; see the class comment.
    explicit local_cluster(cluster_options opts = {});
    ~local_cluster();
    local_cluster(const local_cluster&) = delete;
    local_cluster& operator=(const local_cluster&) = delete;

    /// Nodes in the cluster (masters and replicas).
    [[nodiscard]] std::size_t size() const noexcept { return nodes_.size(); }
    /// Node `i` (0 <= i < size()): its server, to command, kill, pause, resume or restart.
    [[nodiscard]] local_server& node(std::size_t i) const;
    /// Node `i`'s cluster id (40 hex characters, CLUSTER MYID).
    [[nodiscard]] const std::string& id(std::size_t i) const { return ids_.at(i); }
    /// Every node's address, the seed list a cluster client starts from.
    [[nodiscard]] std::vector<host_port> seeds() const;
    /// `redis-cluster://127.0.0.1:p1,127.0.0.1:p2,...` over every node (the endpoint form of
    /// the Cluster issue; the password, if any, as `user:password@`).
    [[nodiscard]] std::string url() const;

    /// The node that serves `slot` as master, as node `asked` (default: any live node that
    /// answers) sees it in CLUSTER SHARDS; nullopt when no live node answers or none serves it.
    [[nodiscard]] std::optional<std::size_t> master_of_slot(std::uint16_t slot) const;
    /// The same for the slot of `key` (hash_slot()).
    [[nodiscard]] std::optional<std::size_t> master_of_key(std::string_view key) const;
    /// The first key `prefix` + 0, 1, 2, ... whose slot master `master` serves (one CLUSTER
    /// SLOTS, then local hashing): names a test wants on a chosen node.
    /// @throws redcoord::error when no node answers or `master` serves no slot.
    [[nodiscard]] std::string key_on(std::size_t master, std::string_view prefix) const;
    /// The nodes that replicate master `i` now (from its INFO replication).
    [[nodiscard]] std::vector<std::size_t> replicas_of(std::size_t i) const;
    /// A node other than `i` that is a master now.
    /// @throws redcoord::error when there is none.
    [[nodiscard]] std::size_t other_master(std::size_t i) const;
    /// True when node `i` is a master now (ROLE).
    [[nodiscard]] bool is_master(std::size_t i) const;

    /// CLUSTER FAILOVER on replica `replica` (FORCE when its master is down or paused), then
    /// waits until it is master and every live node routes its slots to it.
    /// @throws redcoord::error when `replica` is not a replica or the switch does not happen
    ///         within `timeout`.
    void failover(std::size_t replica, bool force = false,
                  std::chrono::milliseconds timeout = std::chrono::milliseconds(15000));
    /// Waits until the cluster has promoted a replica of dead (or paused) master `i` and every
    /// live node routes its slots to the promoted node; returns that node.
    /// @throws redcoord::error when that does not happen within `timeout`.
    std::size_t wait_promoted(std::size_t i,
                              std::chrono::milliseconds timeout = std::chrono::milliseconds(20000));

    /// Starts moving `slot` from its master to master `to`: CLUSTER SETSLOT IMPORTING on the
    /// target, MIGRATING on the source. Until finish_migration(), the source answers -ASK for
    /// keys of the slot it no longer holds.
    void begin_migration(std::uint16_t slot, std::size_t to);
    /// Moves the slot's remaining keys (MIGRATE, in batches) and assigns the slot to the
    /// target on every master (CLUSTER SETSLOT NODE), ending the migration.
    void finish_migration(std::uint16_t slot);
    /// begin_migration() then finish_migration().
    void migrate_slot(std::uint16_t slot, std::size_t to);

    /// Waits until every live node reports `cluster_state:ok`, every slot is served and all
    /// live nodes agree on which node serves each of the slots they report.
    /// @throws redcoord::error when that does not happen within `timeout`.
    void wait_healthy(std::chrono::milliseconds timeout = std::chrono::milliseconds(20000)) const;

    /// The node listening on loopback port `port`, or nullopt when none of this cluster does.
    [[nodiscard]] std::optional<std::size_t> index_of(std::uint16_t port) const;

private:
    [[nodiscard]] std::optional<std::size_t> slot_owner(std::size_t asked,
                                                        std::uint16_t slot) const;

    cluster_options opts_;
    std::vector<std::unique_ptr<local_server>> nodes_;
    std::vector<std::string> ids_;
    struct migration {
        std::uint16_t slot;
        std::size_t from, to;
    };
    std::optional<migration> migrating_;
};

}  // namespace redcoord::testing
REDCOORD_API_END
