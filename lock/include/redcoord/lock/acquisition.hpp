#pragma once
/// @file
/// What a successful acquisition hands back, shared by distributed_lock and redlock.

#include <redcoord/core/export.hpp>

#include <chrono>
#include <cstdint>
#include <string>

REDCOORD_API_BEGIN
namespace redcoord {

/// One successful acquisition of a lock.
///
/// Thread-safety: a plain value type.
struct lock_acquisition {
    /// The value stored under the lock key: 40 hex characters (20 bytes from the kernel
    /// CSPRNG), then `/` and the holder label unless the lock's `label` option is empty
    /// (core/holder_label.hpp); only its owner can release or extend the lock.
    std::string token;
    /// Instant until which the lock may be trusted as held: `start + ttl - drift`, where
    /// `start` was taken before the first request was sent. On the lock's runtime clock
    /// (runtime_clock), which is the steady clock unless a test advanced it.
    std::chrono::steady_clock::time_point valid_until{};
    /// Fencing token: strictly increasing per successful acquisition of the resource on a
    /// single instance (an INCR in the same script as the SET). For redlock it is the
    /// best-effort maximum of the per-node counters (see redlock.hpp for its limits).
    std::uint64_t fencing_token = 0;

    /// Validity left now by the steady clock, in milliseconds (rounded down); zero once it
    /// has passed. (After a test's runtime_clock::advance(), compare valid_until with that
    /// runtime's clock instead.)
    [[nodiscard]] std::chrono::milliseconds remaining() const noexcept;
};

}  // namespace redcoord

REDCOORD_API_END
