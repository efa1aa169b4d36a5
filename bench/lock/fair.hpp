#pragma once
// fair_lock under the contended load (issue 16): the hand-off latency between two
// holders, and 4 processes looping lock() / critical section / unlock() on one resource, with
// their per-process counts (fairness: the smallest against an even share).

#include <chrono>
#include <cstdint>
#include <vector>

namespace lock_bench {

// Two fair_lock holders (threads, each with its own pool and lock object) passing the lock
// back and forth; microseconds from the start of one holder's unlock() to the other's acquire
// returning (the shape of single_handoffs_us).
std::vector<double> fair_handoffs_us(std::uint16_t port, std::chrono::milliseconds run);

struct fair_contended_result {
    std::vector<std::uint64_t> counts;  // critical sections per process
    double seconds = 0;
    [[nodiscard]] std::uint64_t total() const;
    [[nodiscard]] double per_second() const;
    // The smallest count divided by an even share (total / processes); 0 when nothing ran.
    [[nodiscard]] double min_share() const;
};

// `procs` forked processes, each with its own pool and fair_lock, loop acquire / critical
// section / unlock() on one resource for `run`. The critical section is an INCR and a DECR of
// one key on the same server through a plain hiredis connection, and an exclusion check across
// the processes (shared memory: two holders at once aborts the bench).
fair_contended_result fair_contended(std::uint16_t port, int procs = 4,
                                     std::chrono::milliseconds run = std::chrono::seconds(10));

}  // namespace lock_bench
