#pragma once
// Contended runs as the issue describes them: 4 processes (forked, each with its own
// connections and lock object) looping acquire / critical section / release on one resource;
// a shared counter checks exclusion across them. The caller alternates raw and ours in short
// slices that add up to 10 s per side.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <vector>

namespace lock_bench {

struct contended_result {
    double seconds = 0;
    std::uint64_t sections = 0;
    [[nodiscard]] double per_second() const { return seconds > 0 ? static_cast<double>(sections) / seconds : 0.0; }
    contended_result& operator+=(const contended_result& o) {
        seconds += o.seconds;
        sections += o.sections;
        return *this;
    }
};

// Raw clients: SET NX PX; on failure retry after 5 +- 5 ms.
contended_result raw_polling_single(std::uint16_t port, int procs, std::chrono::milliseconds run);
// distributed_lock: lock() / unlock().
contended_result lock_contended_single(std::uint16_t port, int procs, std::chrono::milliseconds run);
// Raw quorum clients over N nodes: all at once, decide at a majority, release partial locks
// at once, retry after 5 +- 5 ms.
contended_result raw_polling_quorum(const std::vector<std::uint16_t>& ports, int procs, std::chrono::milliseconds run);
// redlock: lock() / unlock(). Acquisitions that threw quorum_unreachable are counted, over
// all runs, by quorum_errors().
std::uint64_t quorum_errors();
contended_result redlock_contended(const std::vector<std::uint16_t>& ports, int procs, std::chrono::milliseconds run);
// Two distributed_lock holders passing the lock back and forth; microseconds from the start
// of one holder's unlock() to the other's lock() returning.
std::vector<double> single_handoffs_us(std::uint16_t port, std::chrono::milliseconds run);

}  // namespace lock_bench
