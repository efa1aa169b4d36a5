#pragma once
// Helpers shared by the queue's integration tests.

#include <redcoord/queue/reliable_queue.hpp>

#include <chrono>
#include <string>
#include <utility>

namespace queue_test {

// A consumer whose lease is long and whose background thread stays out of the way.
inline redcoord::reliable_queue_options quiet(std::string id) {
    using namespace std::chrono_literals;
    return {.consumer_id = std::move(id),
            .visibility_timeout = 60s,
            .heartbeat_interval = 30s,
            .recover_interval = 0ms,
            .recover_on_start = false};
}

}  // namespace queue_test
