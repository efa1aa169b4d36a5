#pragma once
// What the runtime bench reads of this process and of a server: threads, resident memory,
// heap, connected clients, subscribed channels.

#include <redcoord/testing/local_server.hpp>

#include <string>
#include <vector>

namespace runtime_bench {

// Threads of this process (/proc/self/task).
long threads_now();
// The names of this process's threads (/proc/self/task/*/comm), sorted.
std::vector<std::string> thread_names();
// The names in `now` that are not in `before` (each name as often as it is new), joined by
// spaces: which threads an operation added.
std::string added_threads(const std::vector<std::string>& before,
                          const std::vector<std::string>& now);
// Resident memory in KiB after the allocator has handed its free pages back (malloc_trim): what
// the live objects hold, not what a burst of threads left cached in malloc's arenas.
double rss_kib();
// Bytes malloc has handed out and not taken back, in KiB.
double heap_kib();
// The server's connected clients, not counting the one asking.
long long clients(const redcoord::testing::local_server& s);
// Channels with at least one subscriber on the server.
long long channels(const redcoord::testing::local_server& s);

}  // namespace runtime_bench
