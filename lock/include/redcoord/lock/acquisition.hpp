#pragma once
/// @file
/// What a successful acquisition hands back, and the time arithmetic of the Redlock page
/// (seed 004, "The Redlock algorithm", steps 1-4), shared by distributed_lock and redlock.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace redcoord {

/// One successful acquisition of a lock.
///
/// Thread-safety: a plain value type.
struct lock_acquisition {
    /// The random value stored under the lock key (40 hex characters, 20 bytes from the
    /// kernel CSPRNG); only its owner can release or extend the lock.
    std::string token;
    /// Steady-clock instant until which the lock may be trusted as held:
    /// `start + ttl - drift`, where `start` was taken before the first request was sent.
    std::chrono::steady_clock::time_point valid_until{};
    /// Fencing token: strictly increasing per successful acquisition of the resource on a
    /// single instance (an INCR in the same script as the SET). For redlock it is the
    /// best-effort maximum of the per-node counters (see redlock.hpp for its limits).
    std::uint64_t fencing_token = 0;

    /// Validity left now, in milliseconds (rounded down); zero once it has passed.
    [[nodiscard]] std::chrono::milliseconds remaining() const noexcept;
};

namespace detail {

/// Clock drift allowance of the Redlock page: `ttl * drift_factor + 2 ms`, in microseconds.
[[nodiscard]] std::chrono::microseconds clock_drift(std::chrono::milliseconds ttl, double drift_factor) noexcept;

/// `ttl - elapsed - drift`, in microseconds; zero or negative means "not valid".
[[nodiscard]] std::chrono::microseconds validity(std::chrono::milliseconds ttl, std::chrono::microseconds elapsed,
                                                 double drift_factor) noexcept;

/// The majority of `n` nodes: `n / 2 + 1` (seed 004, step 3). `n` must be >= 1.
[[nodiscard]] constexpr std::size_t quorum(std::size_t n) noexcept { return n / 2 + 1; }

/// How a quorum round stands after some nodes answered.
enum class quorum_state {
    undecided,    ///< Neither a majority of yes nor enough no's yet.
    reached,      ///< At least quorum(n) nodes said yes.
    refused,      ///< A majority can no longer be reached, and not because nodes are down.
    unreachable,  ///< More than n - quorum(n) nodes are down/hung/erroring: no majority possible.
};

/// Decides a round of `n` nodes with `yes` yes-answers, `no` no-answers and `failed`
/// nodes that gave no usable answer. Pure function (unit tested).
[[nodiscard]] quorum_state decide(std::size_t n, std::size_t yes, std::size_t no, std::size_t failed) noexcept;

}  // namespace detail
}  // namespace redcoord
