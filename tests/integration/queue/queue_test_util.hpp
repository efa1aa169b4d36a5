#pragma once
// Helpers shared by the queue's integration tests.

#include <redcoord/queue/reliable_queue.hpp>

#include <chrono>
#include <string>
#include <thread>
#include <utility>

namespace queue_test {

// A consumer whose lease is long and whose background thread stays out of the way.
inline redcoord::reliable_queue_options quiet(std::string id, std::uint32_t max_attempts = 5) {
    using namespace std::chrono_literals;
    return {.consumer_id = std::move(id),
            .visibility_timeout = 60s,
            .heartbeat_interval = 30s,
            .recover_interval = 0ms,
            .max_attempts = max_attempts,
            .recover_on_start = false};
}

// A consumer whose lease lapses soon after it stops renewing (600 ms) and whose recovery runs
// every 100 ms: for tests where a lost reply retires its identity and recovery returns what
// the retired one held.
inline redcoord::reliable_queue_options short_lease(std::string id) {
    using namespace std::chrono_literals;
    return {.consumer_id = std::move(id),
            .visibility_timeout = 600ms,
            .heartbeat_interval = 100ms,
            .recover_interval = 100ms};
}

// Polls `p` every 10 ms until it holds or `within` passes; its last answer.
template <class Pred>
bool eventually(Pred p, std::chrono::milliseconds within = std::chrono::seconds(10)) {
    const auto end = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < end) {
        if (p()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return p();
}

}  // namespace queue_test
