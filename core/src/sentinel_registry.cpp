// The default runtime's Sentinel resolvers, for callers that name no runtime.
#include "runtime_services.hpp"

#include <redcoord/core/sentinel.hpp>

namespace redcoord {

std::shared_ptr<sentinel_resolver> shared_sentinel_resolver(const endpoint& service) {
    const auto rt = detail::runtime_services::default_runtime();
    return detail::runtime_services(*rt).sentinel(service).resolver;
}

}  // namespace redcoord
