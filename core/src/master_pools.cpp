#include <redcoord/core/cluster.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/master_pools.hpp>

namespace redcoord {

master_pools::master_pools(std::shared_ptr<connection_pool> pool,
                           std::optional<pool_options> per_master)
    : pool_(std::move(pool)) {
    if (!pool_) throw invalid_argument("master_pools: null pool");
    per_master_ = per_master.value_or(pool_->options());
}

std::vector<std::shared_ptr<connection_pool>> master_pools::get() {
    if (!pool_->where().is_cluster()) return {pool_};
    const auto map = pool_->slot_map();
    if (!map) return {pool_};
    std::vector<std::shared_ptr<connection_pool>> out;
    std::map<std::string, std::shared_ptr<connection_pool>> kept;
    std::lock_guard l(mu_);
    for (const auto& shard : map->shards()) {
        const auto id = shard.master.host + ":" + std::to_string(shard.master.port);
        auto& p = kept[id];
        if (!p) {
            const auto old = masters_.find(id);
            p = old != masters_.end()
                    ? old->second
                    : std::make_shared<connection_pool>(pool_->where().with_address(shard.master),
                                                        per_master_, pool_->runtime());
        }
        out.push_back(p);
    }
    masters_ = std::move(kept);  // masters gone from the map are let go
    return out;
}

}  // namespace redcoord
