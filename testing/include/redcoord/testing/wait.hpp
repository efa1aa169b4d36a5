#pragma once
/// @file
/// Waiting in tests for what another thread or process makes true, and counting this
/// process's threads (the runtime's "no thread per object" checks).

#include <redcoord/core/export.hpp>

#include <chrono>
#include <cstddef>
#include <thread>

REDCOORD_API_BEGIN
namespace redcoord::testing {

/// Polls `pred` every `step` until it returns true or `within` has passed; returns its last
/// answer. For conditions that a server, a reader thread or another process makes true.
template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds within = std::chrono::seconds(10),
                std::chrono::milliseconds step = std::chrono::milliseconds(2)) {
    const auto until = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < until) {
        if (pred()) return true;
        std::this_thread::sleep_for(step);
    }
    return pred();
}

/// The number of threads of this process now (entries of /proc/self/task).
[[nodiscard]] std::size_t process_threads();

}  // namespace redcoord::testing

REDCOORD_API_END
