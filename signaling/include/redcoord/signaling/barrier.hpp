#pragma once
/// @file
/// A reusable inter-process barrier whose state lives in Redis keys; pub/sub only wakes the
/// members (docs/signaling.md; compare Curator's DistributedBarrier and Java's CyclicBarrier).

#include <redcoord/core/errors.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/signaling/signal_hub.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

REDCOORD_API_BEGIN
namespace redcoord {

namespace detail {
struct phase_reply;
struct barrier_access;
}  // namespace detail

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

/// Thrown to a barrier or double_barrier member whose lease lapsed (its process stalled, for
/// example SIGSTOP or a long GC pause, for longer than barrier_options::arrival_lease) so that
/// it was not counted, while the group went on without it: the generation passed or the round
/// started or ended without this member, or the barrier was reset. The member did NOT pass /
/// is NOT inside; it may arrive (enter) again, which counts towards the next generation (round).
/// Like java.util.concurrent's BrokenBarrierException, it is never thrown when the member was
/// counted.
class barrier_lease_lost : public error {
public:
    /// @param what_barrier "barrier 'name'" or "double_barrier 'name'";
    /// @param generation the generation (round) the member arrived (entered) in.
    barrier_lease_lost(const std::string& what_barrier, std::uint64_t generation);
    /// The generation (round) the member had arrived (entered) in.
    [[nodiscard]] std::uint64_t generation() const noexcept { return generation_; }

private:
    std::uint64_t generation_;
};

/// Options of barrier and double_barrier.
struct barrier_options {
    /// How long, in milliseconds, one arrival counts without being refreshed. A waiting
    /// member refreshes it every arrival_lease/3 (a double_barrier member inside also does,
    /// on the runtime's timer thread), so a member that dies (SIGKILL) stops counting after at most
    /// this long and cannot make the others pass without it. Must be >= 30 ms.
    std::chrono::milliseconds arrival_lease{3000};
    /// Every key of the barrier expires this long (milliseconds) after its last use; every
    /// arrival, refresh, enter, leave and heartbeat renews it. So barriers with per-job names
    /// do not grow the keyspace forever. A barrier idle for longer starts again from
    /// generation (round) 0 with no stored party count. Must be between 3 x arrival_lease
    /// and 366 days.
    std::chrono::milliseconds idle_ttl{std::chrono::hours(24)};
};

/// A reusable barrier for `parties` processes or threads: arrive_and_wait() returns in all of
/// them once `parties` have arrived, then the barrier is ready for the next generation.
///
/// State (all on the master, one hash slot), every key with a TTL:
/// - `<prefix>barrier:{name}` (hash: generation, parties), expiring barrier_options::idle_ttl
///   after its last use;
/// - `<prefix>barrier:{name}:arrived` (sorted set: member id -> lease expiry in server
///   milliseconds), deleted when a generation passes, else expiring idle_ttl after its last use;
/// - `<prefix>barrier:{name}:passed` (sorted set: member ids counted in recently passed
///   generations), each kept 10 x arrival_lease (at most idle_ttl) after its generation passed,
///   the key expiring with its last entry. Its size is bounded by the parties that passed in
///   that span.
///
/// One Lua script arrives, refreshes or withdraws atomically; the last arriver advances the
/// generation, records the counted members, clears the arrivals and publishes the new
/// generation on channel `<prefix>barrier:{name}`. Members subscribe FIRST, then arrive (which
/// reads the state), then wait; every wake and every arrival_lease/3 they re-read the
/// generation, so a lost signal (both links down) costs at most that long and is never missed.
///
/// A member learns that it passed only when it was counted: a member whose lease lapsed
/// before the generation passed gets barrier_lease_lost, never a pass. A counted
/// member that stalls for longer than the passed-member retention (10 x arrival_lease) gets
/// barrier_lease_lost too, as it can no longer be told apart.
///
/// A timed-out arrival is withdrawn atomically: either the barrier had already passed with
/// this member counted (and arrive_and_wait() returns normally) or the caller no longer counts.
///
/// A call that ends with any other error (a lost reply, a refused script) may leave its arrival
/// counting on the server until its lease lapses. The next arrive_and_wait() from the same
/// thread on the same object resumes that arrival (the same member id) instead of adding a
/// second one, so a retry never counts one party twice: it returns the generation the earlier
/// arrival passed in, if it did; else it waits in the open generation as that arrival.
///
/// After its first arrival the object keeps its channel subscribed (so later rounds need no
/// subscribe round trip) until it is destroyed; signals arriving between rounds are not
/// queued anywhere.
///
/// @par Thread safety
/// arrive_and_wait() may be called from several threads at once (each call is
/// one party). The hub must outlive the barrier.
///
/// @par Errors
/// The constructor throws invalid_argument; arrive_and_wait() throws barrier_timeout,
/// barrier_lease_lost, invalid_argument (a different party count in Redis) and the master's
/// connection_error, timeout_error, pool_exhausted or reply_error; arrived(), generation(),
/// reset() and force_reset() throw the connection and pool errors.
///
/// @par Cost
/// arrive_and_wait(): a subscription on the shared links, then one EVALSHA round trip to arrive,
/// one per wake, and one every arrival_lease / 3 while waiting (lease refresh and re-read); the
/// last arriver's script publishes once. arrived(), generation(), reset() and force_reset():
/// one EVALSHA each.
class barrier {
public:
    /// @param hub signal hub (its master pool runs the scripts; its prefix names the keys).
    /// @param name barrier name (validate_name rules; glob characters allowed).
    /// @param parties how many arrivals complete a generation; must be >= 1.
    /// @param opts leases, TTLs and re-check timing (barrier_options).
    /// @throws invalid_argument for a bad name, parties or options.
    barrier(signal_hub& hub, std::string name, std::size_t parties, barrier_options opts = {});

    /// Arrives and waits until `parties` have arrived in this generation.
    /// @param timeout longest wait in milliseconds, counted from the call;
    ///        milliseconds::max() (or anything beyond ten years) waits without a deadline.
    /// @return the generation that passed (0 for the first).
    /// @throws barrier_timeout when the timeout passed first (the arrival is withdrawn);
    /// @throws barrier_lease_lost when this arrival's lease lapsed and the generation passed
    ///         (or the barrier was reset) without counting it;
    /// @throws invalid_argument when the barrier exists in Redis with a different party count;
    /// @throws connection_error, timeout_error, ... from the master or the hub.
    std::uint64_t arrive_and_wait(std::chrono::milliseconds timeout);

    /// Parties currently arrived in the open generation (expired leases not counted).
    /// Works whatever party count the barrier has in Redis.
    [[nodiscard]] std::size_t arrived();
    /// Generations completed so far (0 again after reset() or idle_ttl of disuse).
    [[nodiscard]] std::uint64_t generation();
    /// Deletes the barrier's keys, for example to change its party count, but only while no live
    /// arrival is waiting (one atomic script): a reset never pulls the rug from under a
    /// counted member. A member whose lease had lapsed and that resumes after the reset gets
    /// barrier_lease_lost (it never reads the reset as "passed"), or, when it had arrived in
    /// generation 0, simply arrives in the fresh barrier.
    /// @return true when the keys were deleted; false (nothing changed) while a member waits.
    /// @throws connection and pool errors.
    bool reset();
    /// Resets the barrier even while members wait, for example when it was started with a
    /// mistyped party count (one atomic script). With nobody inside it is reset(). Otherwise
    /// the party count and the arrivals are deleted and the generation moves on (so
    /// generation() is not 0 afterwards), and the channel is published: every waiting member
    /// wakes and gets barrier_lease_lost (it did not pass). The next arrival, with any party
    /// count, starts the barrier afresh. Meant for operators (`redcoord barrier NAME --reset
    /// --force`); a program should prefer reset().
    /// @return how many live arrivals were dropped (0: the barrier was idle).
    /// @throws connection and pool errors.
    std::size_t force_reset();

    /// The barrier's name, as given.
    [[nodiscard]] const std::string& name() const noexcept { return name_; }
    /// The party count this object was made with.
    [[nodiscard]] std::size_t parties() const noexcept { return parties_; }

private:
    friend struct detail::barrier_access;  // async_arrive_and_wait (async.hpp)
    detail::phase_reply run(const std::string& member, std::size_t parties, const char* mode,
                            std::uint64_t gen);
    signal_hub& hub_;
    std::string name_;
    std::size_t parties_;
    barrier_options opts_;
    std::string state_key_, arrived_key_, passed_key_, channel_;
    // An arrival whose call ended by an error other than timeout or lease loss: still counting
    // on the server, perhaps, so this thread's next call resumes it.
    struct pending_arrival {
        std::string member;
        std::optional<std::uint64_t> generation;      // unknown when the arrival's reply was lost
        std::chrono::steady_clock::time_point until;  // no use resuming after this
    };
    [[nodiscard]] std::optional<pending_arrival> take_pending();
    void keep_pending(std::string member, std::optional<std::uint64_t> generation);

    std::mutex anchor_mu_;
    std::shared_ptr<void> anchor_;  // keeps the channel subscribed between rounds, queues nothing
    std::mutex pending_mu_;
    std::map<std::thread::id, pending_arrival> pending_;
};

}  // namespace redcoord

REDCOORD_API_END
