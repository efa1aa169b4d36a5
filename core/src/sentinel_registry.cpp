// The process-wide registry of Sentinel resolvers: pools and subscribers of equal Sentinel
// endpoints share one resolver, so they follow one view of the master.
#include <redcoord/core/runtime.hpp>
#include <redcoord/core/sentinel.hpp>

#include <map>
#include <mutex>
#include <string>

namespace redcoord {

std::shared_ptr<sentinel_resolver> shared_sentinel_resolver(const endpoint& service) {
    static std::mutex registry_mu;
    static std::map<std::string, std::weak_ptr<sentinel_resolver>> registry;
    // Everything that shapes the resolver's connections is part of the key.
    const std::string key = detail::endpoint_key(service);
    std::lock_guard lk(registry_mu);
    std::erase_if(registry, [](auto& e) { return e.second.expired(); });
    if (auto r = registry[key].lock()) return r;
    auto r = std::make_shared<sentinel_resolver>(service);
    registry[key] = r;
    return r;
}

}  // namespace redcoord
