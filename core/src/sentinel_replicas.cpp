// discover_replicas(): the replicas of a Sentinel service (asked of its sentinels) or of one
// server (its ROLE reply).
#include "sentinel_parse.hpp"

#include <redcoord/core/connection.hpp>
#include <redcoord/core/sentinel.hpp>

namespace redcoord {

std::vector<endpoint> discover_replicas(const endpoint& ep) {
    std::vector<endpoint> out;
    if (ep.is_sentinel()) {
        sentinel_options o;
        o.follow_notifications = false;
        sentinel_resolver r(ep, o);
        for (auto& hp : r.replicas()) out.push_back(ep.with_address(hp));
        return out;
    }
    connection c(ep);
    for (auto& hp : detail::replicas_from_role(c.command({"ROLE"}))) {
        endpoint e = ep;
        e.host = hp.host;
        e.port = hp.port;
        e.unix_path.clear();
        out.push_back(std::move(e));
    }
    return out;
}

}  // namespace redcoord
