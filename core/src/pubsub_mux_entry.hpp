#pragma once
// Private to core: one listener's registration in a pubsub_mux, shared by its one-server
// (pubsub_mux.cpp) and cluster (pubsub_mux_cluster.cpp) halves.

#include <redcoord/core/detail/pubsub_mux.hpp>

#include <mutex>
#include <string>

namespace redcoord::detail {

struct pubsub_mux::entry {
    bool pattern = false;
    std::string name;
    handlers h;
    // Held while a handler runs and while the listener unregisters, so that after reset()
    // returns no handler of it runs. Recursive: a handler may reset its own listener.
    std::recursive_mutex call_mu;
    bool gone = false;  // under call_mu
};

// host:port (or unix:path) of `ep`: two endpoints that reach the same server.
std::string pubsub_address_of(const endpoint& ep);

}  // namespace redcoord::detail
