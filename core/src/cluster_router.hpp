#pragma once
// Private to core: what a `redis-cluster://` connection_pool routes with. It keeps the slot
// map (CLUSTER SHARDS, else CLUSTER SLOTS), a plain pool per node, and follows the
// redirections of the Redis Cluster specification on the connections it opened.

#include "cluster_nodes.hpp"
#include "connection_impl.hpp"
#include "slot_router.hpp"

#include <redcoord/core/cluster.hpp>
#include <redcoord/core/pool.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace redcoord::detail {

class cluster_router final : public slot_router,
                             public redirect_follower,
                             public std::enable_shared_from_this<cluster_router> {
public:
    using clock = std::chrono::steady_clock;
    // How often the map is asked for again without cause, and the least time between two
    // asks with a cause (a MOVED, a broken link), so a failover in progress is not
    // hammered with CLUSTER SHARDS.
    static constexpr std::chrono::milliseconds refresh_interval{10'000};
    static constexpr std::chrono::milliseconds refresh_spacing{100};

    cluster_router(endpoint ep, pool_options opts, std::shared_ptr<redcoord::runtime> rt);

    // A lease on the master serving `slot` (any master without one), waiting up to `wait`
    // for a free connection. @throws cluster_unavailable when no node can tell the map or no
    // master serves the slot, invalid_argument when the seeds are not cluster nodes, and
    // what connection_pool::borrow() throws.
    pooled_connection borrow(std::optional<std::uint16_t> slot,
                             std::chrono::milliseconds wait) override;
    // A lease on the node at `node`.
    pooled_connection borrow_node(const host_port& node, std::chrono::milliseconds wait);
    // The current map, asked for first when it is due. @throws as borrow().
    std::shared_ptr<const cluster_map> map() override;
    // Asks for the map now (the spacing above still applies unless `force`).
    void refresh(bool force) override;

    pool_stats stats() const override;
    void clear_idle() noexcept override;

    std::optional<reply> follow(connection::impl& from, const reply& r,
                                std::chrono::milliseconds timeout,
                                std::span<const std::string_view> argv) override;
    void seen(const connection::impl& from, const reply& r) noexcept override;

private:
    connection_pool& node_pool(const host_port& node);
    void moved(std::uint16_t slot, const host_port& to);
    void broken(const host_port& node) noexcept;
    std::optional<cluster_map> ask(const host_port& node);

    const endpoint ep_;
    const pool_options opts_;
    const std::shared_ptr<redcoord::runtime> rt_;

    mutable std::mutex mu_;
    std::shared_ptr<const cluster_map> map_;
    clock::time_point asked_at_{};
    bool stale_ = true;
    std::map<std::string, std::shared_ptr<connection_pool>> nodes_;
    std::map<std::string, clock::time_point> failed_at_;  // node -> its last broken link
    std::mutex refresh_mu_;                               // one ask at a time
};

}  // namespace redcoord::detail
