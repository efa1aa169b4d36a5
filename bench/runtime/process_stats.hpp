#pragma once
// What the runtime bench reads of this process and of a server: threads, resident memory,
// heap, connected clients, subscribed channels.

#include <redcoord/testing/local_server.hpp>

namespace runtime_bench {

// Threads of this process (/proc/self/task).
long threads_now();
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
