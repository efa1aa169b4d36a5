#pragma once
// Private to core: what a Cluster endpoint's connection_pool needs of the router that knows
// the slot map. Declared in the pool layer and implemented by the topology layer's
// cluster_router, so the pool never includes the router (scripts/core-layers).

#include <redcoord/core/cluster.hpp>
#include <redcoord/core/pool.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

namespace redcoord::detail {

class slot_router {
public:
    virtual ~slot_router() = default;
    // A lease on the master serving `slot` (any master without one), waiting up to `wait`
    // for a free connection. @throws cluster_unavailable when no node can tell the map or no
    // master serves the slot, invalid_argument when the seeds are not cluster nodes, and
    // what connection_pool::borrow() throws.
    virtual pooled_connection borrow(std::optional<std::uint16_t> slot,
                                     std::chrono::milliseconds wait) = 0;
    // The current map, asked for first when it is due. @throws as borrow().
    virtual std::shared_ptr<const cluster_map> map() = 0;
    // Asks for the map now (a spacing between asks still applies unless `force`).
    virtual void refresh(bool force) = 0;
    // The node pools' counts, summed.
    [[nodiscard]] virtual pool_stats stats() const = 0;
    // Closes the node pools' idle connections.
    virtual void clear_idle() noexcept = 0;
};

}  // namespace redcoord::detail
