#include "cluster_nodes.hpp"

#include "connection_impl.hpp"

#include <redcoord/core/errors.hpp>

#include <exception>

namespace redcoord::detail {

std::string node_key(const host_port& hp) { return hp.host + ":" + std::to_string(hp.port); }

connection open_cluster_node(const endpoint& cluster, std::chrono::milliseconds connect_timeout) {
    std::exception_ptr last;
    for (const auto& node : cluster.cluster_nodes) {
        try {
            return open_connection(cluster.with_address(node), connect_timeout);
        } catch (const auth_error&) {
            throw;
        } catch (const error&) {
            last = std::current_exception();
        }
    }
    if (last) std::rethrow_exception(last);
    throw invalid_argument("a cluster endpoint without seed nodes");
}

}  // namespace redcoord::detail
