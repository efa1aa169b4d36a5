#pragma once
// Contended runs as issue 16 describes them: 4 processes (forked, each with its own
// connections and lock object) looping lock / critical section / unlock on one resource. The
// critical section is an INCR and a DECR of a counter on the first server, whose INCR must
// answer 1 (exclusion is checked in every run; a second holder aborts the bench). Each
// process counts its own sections, and every lock() call's wait (from the call to holding
// the lock) goes into a histogram shared by the processes.

#include <chrono>
#include <cstdint>
#include <vector>

namespace lock_bench {

struct contended_result {
    double seconds = 0;
    std::vector<std::uint64_t> per_process;  // sections by process index (summed over slices)
    [[nodiscard]] std::uint64_t sections() const;
    [[nodiscard]] double per_second() const;
    // The smallest process's sections divided by an even share (1.0: perfectly even).
    [[nodiscard]] double min_share() const;
    contended_result& operator+=(const contended_result& o);
};

// Which wait histogram a run records into.
enum class waits {
    raw1,
    ours1,
    raw5,
    ours5,
    fair
};
// The p-th percentile (0..100) of the waits recorded so far, in milliseconds.
double wait_percentile_ms(waits which, double p);
std::uint64_t wait_count(waits which);

// Plain clients: SET NX PX; on failure retry after 5 +- 5 ms.
contended_result raw_polling_single(std::uint16_t port, int procs, std::chrono::milliseconds run);
// distributed_lock: lock() / unlock(); with `defer_release`, the opt-in hold-back of releases.
contended_result lock_contended_single(std::uint16_t port, int procs, std::chrono::milliseconds run,
                                       bool defer_release = false);
// Plain quorum clients over N nodes: all at once, decide at a majority, release partial locks
// at once, retry after 5 +- 5 ms.
contended_result raw_polling_quorum(const std::vector<std::uint16_t>& ports, int procs,
                                    std::chrono::milliseconds run);
// redlock: lock() / unlock().
contended_result redlock_contended(const std::vector<std::uint16_t>& ports, int procs,
                                   std::chrono::milliseconds run);
// fair_lock: lock() / unlock().
contended_result fair_contended(std::uint16_t port, int procs, std::chrono::milliseconds run);
// Two distributed_lock holders passing the lock back and forth; microseconds from the start
// of one holder's unlock() to the other's lock() returning.
std::vector<double> single_handoffs_us(std::uint16_t port, std::chrono::milliseconds run);
// The same with two fair_lock holders.
std::vector<double> fair_handoffs_us(std::uint16_t port, std::chrono::milliseconds run);

}  // namespace lock_bench
