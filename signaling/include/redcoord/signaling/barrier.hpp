#pragma once
/// @file
/// A reusable inter-process barrier whose state lives in Redis keys; pub/sub only wakes the
/// members (DESIGN.md §Signaling; cf. Curator DistributedBarrier, java CyclicBarrier).

#include <redcoord/core/errors.hpp>
#include <redcoord/signaling/signal_hub.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

namespace redcoord {

/// Thrown when a barrier (or double_barrier phase) does not complete within the caller's
/// timeout. what() names the barrier and how many parties had arrived (or were still
/// inside) out of how many.
class barrier_timeout : public timeout_error {
public:
    /// @param name barrier name; @param arrived parties counted when the wait gave up
    /// (including the caller); @param parties parties required; @param what_happened
    /// "arrived" or "still inside".
    barrier_timeout(const std::string& name, std::size_t arrived, std::size_t parties,
                    const std::string& what_happened = "arrived");
    /// Parties counted when the wait gave up (arrived, or still inside for a leave()).
    [[nodiscard]] std::size_t arrived() const noexcept { return arrived_; }
    /// Parties the barrier needs.
    [[nodiscard]] std::size_t parties() const noexcept { return parties_; }

private:
    std::size_t arrived_;
    std::size_t parties_;
};

/// Options of barrier and double_barrier.
struct barrier_options {
    /// How long, in milliseconds, one arrival counts without being refreshed. A waiting
    /// member refreshes it every arrival_lease/3, so a member that dies (SIGKILL) stops
    /// counting after at most this long and cannot make the others pass without it.
    /// Must be >= 30 ms.
    std::chrono::milliseconds arrival_lease{3000};
};

/// A reusable barrier for `parties` processes or threads: arrive_and_wait() returns in all of
/// them once `parties` have arrived, then the barrier is ready for the next generation.
///
/// State (all on the master, one hash slot): `<prefix>barrier:{name}` (hash: generation,
/// parties) and `<prefix>barrier:{name}:arrived` (sorted set: member id -> lease expiry in
/// server milliseconds). One Lua script arrives, refreshes or withdraws atomically; the last
/// arriver advances the generation, clears the arrivals and publishes the new generation on
/// channel `<prefix>barrier:{name}`. Members subscribe FIRST, then arrive (which reads the
/// state), then wait; every wake and every arrival_lease/3 they re-read the generation, so a
/// lost signal (both links down) costs at most that long and is never missed.
///
/// A timed-out arrival is withdrawn atomically: either the barrier had already passed (and
/// arrive_and_wait() returns normally) or the caller no longer counts.
///
/// After its first arrival the object keeps its channel subscribed (so later rounds need no
/// subscribe round trip) until it is destroyed.
///
/// Thread-safety: arrive_and_wait() may be called from several threads at once (each call is
/// one party). The hub must outlive the barrier.
class barrier {
public:
    /// @param hub signal hub (its master pool runs the scripts; its prefix names the keys).
    /// @param name barrier name (validate_name rules; glob characters allowed).
    /// @param parties how many arrivals complete a generation; must be >= 1.
    /// @throws invalid_argument for a bad name, parties or options.
    barrier(signal_hub& hub, std::string name, std::size_t parties, barrier_options opts = {});

    /// Arrives and waits until `parties` have arrived in this generation.
    /// @param timeout longest wait in milliseconds, counted from the call.
    /// @return the generation that passed (0 for the first).
    /// @throws barrier_timeout when the timeout passed first (the arrival is withdrawn);
    /// @throws invalid_argument when the barrier exists in Redis with a different party count;
    /// @throws connection_error, timeout_error, ... from the master or the hub.
    std::uint64_t arrive_and_wait(std::chrono::milliseconds timeout);

    /// Parties currently arrived in the open generation (expired leases not counted).
    [[nodiscard]] std::size_t arrived();
    /// Generations completed so far.
    [[nodiscard]] std::uint64_t generation();
    /// Deletes the barrier's keys (only when nobody is waiting), e.g. to change parties.
    void reset();

    [[nodiscard]] const std::string& name() const noexcept { return name_; }
    [[nodiscard]] std::size_t parties() const noexcept { return parties_; }

private:
    signal_hub& hub_;
    std::string name_;
    std::size_t parties_;
    barrier_options opts_;
    std::string state_key_, arrived_key_, channel_;
    std::mutex anchor_mu_;
    std::optional<waiter> anchor_;  // holds the subscription between rounds; drained, never read
};

}  // namespace redcoord
