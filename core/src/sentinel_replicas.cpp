// discover_replicas(): the replicas of a Sentinel service (asked of its sentinels) or of one
// server (its ROLE reply, else its INFO replication).
#include "sentinel_replicas.hpp"

#include "sentinel_parse.hpp"

#include <redcoord/core/connection.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/sentinel.hpp>

namespace redcoord {

namespace detail {

replica_discovery discover_replicas_of(const endpoint& ep, std::shared_ptr<runtime> rt) {
    replica_discovery out;
    if (ep.is_sentinel()) {
        sentinel_options o;
        o.follow_notifications = false;
        o.runtime = std::move(rt);
        sentinel_resolver r(ep, o);
        for (auto& hp : r.replicas()) out.replicas.push_back(ep.with_address(hp));
        return out;
    }
    connection c(ep);
    std::vector<host_port> found;
    try {
        found = replicas_from_role(c.command({"ROLE"}));
    } catch (const reply_error& role) {
        // ROLE is @admin @dangerous, so a least-privilege user (-@dangerous) may lack it, as
        // may a server that renamed it. INFO (@dangerous too) lists the same replicas; with
        // neither, a master-only answer, so that pub/sub keeps its master link instead of
        // failing for the sake of an optional extra.
        try {
            found = replicas_from_info(c.command({"INFO", "replication"}));
        } catch (const reply_error& info) {
            out.refused = std::string(role.what()) + "; " + info.what();
            return out;
        }
    }
    for (auto& hp : found) {
        endpoint e = ep;
        e.host = hp.host;
        e.port = hp.port;
        e.unix_path.clear();
        out.replicas.push_back(std::move(e));
    }
    return out;
}

}  // namespace detail

std::vector<endpoint> discover_replicas(const endpoint& ep) {
    return detail::discover_replicas_of(ep).replicas;
}

}  // namespace redcoord
