#pragma once
// N local masters with a connection pool each, the nodes a Redlock test's lock runs on.

#include <redcoord/core/pool.hpp>
#include <redcoord/testing/local_server.hpp>

#include <cstddef>
#include <memory>
#include <vector>

namespace redcoord::testing {

struct master_nodes {
    std::vector<std::unique_ptr<local_server>> servers;
    std::vector<std::unique_ptr<connection_pool>> pools;
    std::vector<connection_pool*> nodes;  // the pools, in the servers' order

    explicit master_nodes(std::size_t n) : servers(start_masters(n)) {
        for (auto& s : servers) {
            pools.push_back(std::make_unique<connection_pool>(s->endpoint()));
            nodes.push_back(pools.back().get());
        }
    }
};

}  // namespace redcoord::testing
