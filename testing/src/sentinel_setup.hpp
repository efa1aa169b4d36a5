#pragma once
// What local_sentinel and local_network share about starting sentinels: the directives one
// sentinel starts with, and when a sentinel's view of its replicas counts as ready.

#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/reply.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace redcoord::testing::detail {

// One sentinel of a group, as it is told at start.
struct sentinel_setup {
    std::string service;
    host_port master;
    std::size_t quorum = 2;
    std::chrono::milliseconds down_after{500}, failover_timeout{2000};
    std::size_t parallel_syncs = 1;
    std::string auth_pass;    // the servers' password; empty: none
    std::string my_id;        // 40 hex characters
    std::string announce_ip;  // empty: the address it is reached by
    std::vector<host_port> replicas;
    struct peer {
        host_port address;
        std::string id;
    };
    std::vector<peer> others;  // the other sentinels of the group
};

// Its `sentinel ...` configuration lines as (name, value) pairs. Replicas and the other
// sentinels are known from the start, so a failover needs no hello-message discovery first.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> sentinel_directives(
    const sentinel_setup& s);

// The replicas a `SENTINEL REPLICAS` reply shows usable: flagged plain "slave" (not down)
// with their link to the master up.
[[nodiscard]] std::size_t usable_replicas(const reply& sentinel_replicas);

}  // namespace redcoord::testing::detail
