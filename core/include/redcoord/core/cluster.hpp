#pragma once
/// @file
/// Redis Cluster topology: the slot map a `redis-cluster://` pool routes by, and the
/// redirections (`MOVED`, `ASK`) a node answers with. Source: the Redis Cluster
/// specification ("Redirection and resharding", "MOVED Redirection", "ASK redirection") and
/// the CLUSTER SHARDS / CLUSTER SLOTS command pages on redis.io.

#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/core/hash_slot.hpp>
#include <redcoord/core/reply.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord {

/// An inclusive range of hash slots, `first..last`, both in [0, 16384).
struct slot_range {
    std::uint16_t first = 0;  ///< First slot of the range.
    std::uint16_t last = 0;   ///< Last slot of the range (inclusive).
    friend bool operator==(const slot_range&, const slot_range&) = default;
};

/// One shard of a cluster: the slots it serves, its master and its replicas.
struct cluster_shard {
    std::vector<slot_range> slots;    ///< The slot ranges the shard serves.
    host_port master;                 ///< Where the shard's master listens.
    std::vector<host_port> replicas;  ///< Its replicas not marked failed, in the server's order.
};

/// A snapshot of which shard serves which hash slot, built from a node's CLUSTER SHARDS
/// (Redis 7) or CLUSTER SLOTS (older) reply.
///
/// @par Thread safety
/// A value type: const members may be called from any thread; mutation needs exclusive use.
///
/// @par Errors
/// The parsers throw protocol_error for a reply of the wrong shape (not a cluster node's
/// answer). Lookups never throw.
///
/// @par Cost
/// Lookups are O(1) (a table of 16384 entries).
class cluster_map {
public:
    /// An empty map: no slot is served.
    cluster_map();

    /// Parses a CLUSTER SHARDS reply (RESP2: each shard a flat `slots`/`nodes` map, each node a
    /// flat field map). Per shard the node whose role is `master` becomes the master (an
    /// online one first), and the nodes of role `replica` not marked `failed` the replicas
    /// (Redis 7.0 calls an idle replica `loading`); shards without
    /// slots (a master just added) are left out.
    /// @param r the reply, as read over RESP2.
    /// @param asked the node that answered: stands in for a node whose `endpoint` is unknown
    ///        (`?` or empty).
    /// @param tls read each node's `tls-port` instead of `port` (TLS clusters announce both).
    /// @throws protocol_error on a reply that is not of this shape.
    [[nodiscard]] static cluster_map from_shards(const reply& r, const host_port& asked,
                                                 bool tls = false);
    /// Parses a CLUSTER SLOTS reply: `[first, last, [ip, port, id, ...], replicas...]` per
    /// range; an empty ip means the node that answered (`asked`).
    /// @param r the reply, as read over RESP2.
    /// @param asked the node that answered.
    /// @throws protocol_error on a reply that is not of this shape.
    [[nodiscard]] static cluster_map from_slots(const reply& r, const host_port& asked);

    /// The shards, in the order the server listed them.
    [[nodiscard]] const std::vector<cluster_shard>& shards() const noexcept { return shards_; }
    /// The shard serving `slot`, or nullptr when no shard does (or `slot` >= 16384).
    [[nodiscard]] const cluster_shard* shard_of(std::uint16_t slot) const noexcept;
    /// The master serving `slot`, or nullptr when none does.
    [[nodiscard]] const host_port* master_of(std::uint16_t slot) const noexcept;
    /// True when every one of the 16384 slots is served.
    [[nodiscard]] bool covers_all_slots() const noexcept;
    /// Records a `MOVED slot address` answer: `slot` is now served by the master at `to`
    /// (a shard of its own when no known shard has that master).
    void move_slot(std::uint16_t slot, const host_port& to);

private:
    std::vector<cluster_shard> shards_;
    // Per slot: the index of its shard in shards_, or -1 when none serves it.
    std::vector<std::int16_t> owner_;
    void index();
};

/// A redirection a cluster node answered with instead of running a command.
struct cluster_redirect {
    bool ask = false;        ///< `ASK` (one command, after ASKING) rather than `MOVED` (for good).
    std::uint16_t slot = 0;  ///< The hash slot of the command's keys.
    host_port to;            ///< Where to send it; an empty host means the node that answered.
};

/// Reads `MOVED <slot> <host>:<port>` or `ASK <slot> <host>:<port>` from an error reply's text
/// (IPv6 hosts are written without brackets: the port follows the last colon).
/// @return the redirection, or nullopt for any other text.
/// @par Thread safety
/// A pure function.
[[nodiscard]] std::optional<cluster_redirect> parse_redirect(std::string_view error_text);

}  // namespace redcoord

REDCOORD_API_END
