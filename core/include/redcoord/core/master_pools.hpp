#pragma once
/// @file
/// One connection pool per master of a Redis Cluster, for work that must reach every master
/// in turn (a SCAN of the whole keyspace, a readiness PING of each), where a cluster pool
/// routes each command by its key's hash slot instead.

#include <redcoord/core/export.hpp>
#include <redcoord/core/pool.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord {

/// The masters behind a pool: the pool itself for a single server or Sentinel service, one
/// pool per master of the slot map for a Cluster.
///
/// Thread-safety: all members may be called from any thread, concurrently.
class master_pools {
public:
    /// Masters of `pool`; each master's pool is made with `per_master` (nothing: the options
    /// of `pool`), on the runtime of `pool`.
    /// @throws invalid_argument for a null pool.
    explicit master_pools(std::shared_ptr<connection_pool> pool,
                          std::optional<pool_options> per_master = std::nullopt);

    /// `{pool}` when it is not a cluster pool; else one pool per master of the slot map the
    /// cluster pool last learned (connection_pool::slot_map()), in the map's order. A master's
    /// pool is made on first use and kept while the master stays in the map.
    /// @throws as connection_pool::slot_map() when the map cannot be learned.
    [[nodiscard]] std::vector<std::shared_ptr<connection_pool>> get();

    /// The pool given at construction.
    [[nodiscard]] const std::shared_ptr<connection_pool>& pool() const noexcept { return pool_; }

private:
    std::shared_ptr<connection_pool> pool_;
    pool_options per_master_;
    std::mutex mu_;
    std::map<std::string, std::shared_ptr<connection_pool>> masters_;  // by host:port
};

}  // namespace redcoord
REDCOORD_API_END
