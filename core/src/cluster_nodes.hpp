#pragma once
// Private to core: the nodes of a Redis Cluster endpoint as the pools, the router and the
// pub/sub reader reach them. Below the topology layer, so that the pub/sub reader dials a
// cluster without the router (scripts/core-layers).

#include <redcoord/core/connection.hpp>
#include <redcoord/core/endpoint.hpp>

#include <chrono>
#include <string>

namespace redcoord::detail {

// A connection to the first seed node of `cluster` that accepts one (classic pub/sub reaches
// every node of a cluster, so any serves a subscriber). @throws the last node's error.
connection open_cluster_node(const endpoint& cluster, std::chrono::milliseconds connect_timeout);

// `host:port`: the key of a node in the router's and the pub/sub multiplexer's maps.
std::string node_key(const host_port& hp);

}  // namespace redcoord::detail
