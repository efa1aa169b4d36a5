#pragma once
// N local masters with a connection pool each, the nodes a Redlock test's lock runs on.

#include <redcoord/core/pool.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/testing/local_server.hpp>

#include <cstddef>
#include <memory>
#include <vector>

namespace redcoord::testing {

struct master_nodes {
    std::vector<std::unique_ptr<local_server>> servers;
    std::vector<std::unique_ptr<connection_pool>> pools;
    std::vector<connection_pool*> nodes;  // the pools, in the servers' order

    // The pools are on `rt` (null: the process's runtime).
    explicit master_nodes(std::size_t n, std::shared_ptr<runtime> rt = nullptr)
        : servers(start_masters(n)) {
        for (auto& s : servers) {
            pools.push_back(std::make_unique<connection_pool>(s->endpoint(), pool_options{}, rt));
            nodes.push_back(pools.back().get());
        }
    }
};

}  // namespace redcoord::testing
