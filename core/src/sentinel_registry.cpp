// The default runtime's Sentinel resolvers, for callers that name no runtime.
#include <redcoord/core/runtime.hpp>
#include <redcoord/core/sentinel.hpp>

namespace redcoord {

std::shared_ptr<sentinel_resolver> shared_sentinel_resolver(const endpoint& service) {
    return runtime::shared()->sentinel(service);
}

}  // namespace redcoord
