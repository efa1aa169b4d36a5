#pragma once
/// @file
/// Waiting in tests for what another thread or process makes true, and counting this
/// process's threads (the runtime's "no thread per object" checks).

#include <redcoord/core/export.hpp>

#include <chrono>
#include <cstddef>
#include <string_view>
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

/// True in a build under AddressSanitizer or ThreadSanitizer (./scripts/test --sanitize,
/// --tsan), which run the process's own code several times slower: the checks that bound how
/// long a process takes to start and fail, or that count what a busy schedule does in a fixed
/// time, read it. The server is never built with a sanitizer, so server-side timing is not
/// affected.
[[nodiscard]] constexpr bool sanitized_build() noexcept {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
    return true;
#else
    return false;
#endif
#else
    return false;
#endif
}

/// How many times a time limit on this process's own work is stretched in this build: 3
/// under a sanitizer (ASan start-up alone adds about a second to a large binary here), else
/// 1, so plain builds check the documented limit itself.
[[nodiscard]] constexpr int sanitizer_stretch() noexcept { return sanitized_build() ? 3 : 1; }

/// The number of threads of this process now (entries of /proc/self/task). The first call
/// starts and joins a thread first, so that a sanitizer's helper thread (ThreadSanitizer
/// starts one with the process's first thread) is there in every count.
[[nodiscard]] std::size_t process_threads();

/// The number of this process's threads named `name` now (/proc/self/task/*/comm): redcoord
/// names the threads it starts ("rc-pubsub-read", "rc-tick", ...; README, "One runtime per
/// process").
[[nodiscard]] std::size_t threads_named(std::string_view name);

}  // namespace redcoord::testing

REDCOORD_API_END
