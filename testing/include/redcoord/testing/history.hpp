#pragma once
/// @file
/// Histories of fault runs and the checkers of the guarantees the README promises, in the
/// manner of Jepsen's histories: every client logs each operation's invocation and completion
/// on CLOCK_MONOTONIC (one clock for every namespace of a kernel), and the checkers look for a
/// counter-example. Pure logic: no server, no clock of their own.

#include <redcoord/core/export.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord::testing::history {

/// One logged operation. Times are CLOCK_MONOTONIC nanoseconds; `start_ns` is the invocation,
/// `end_ns` the completion (for a holding or term: when it began and when its owner stopped
/// relying on it, whichever came first of release, loss and validity end).
struct event {
    std::string client;         ///< The process or identity that ran it.
    std::string op;             ///< What it was; each checker names the ops it reads.
    std::int64_t start_ns = 0;  ///< Invocation (or beginning).
    std::int64_t end_ns = 0;    ///< Completion (or end).
    bool ok = false;            ///< Succeeded (acquired, accepted, acknowledged, received).
    std::uint64_t token = 0;    ///< Fencing token or epoch, where the op has one.
    std::uint64_t seq = 0;      ///< Order in which the resource decided (guarded writes).
    std::string id;             ///< Message or signal id, where the op has one.
};

/// One counter-example: the rule broken and the events that show it.
struct violation {
    std::string rule;  ///< E.g. "mutual exclusion".
    std::string what;  ///< The events involved, readable.
};

/// Locks (distributed_lock, redlock, fair_lock). Reads:
/// - `hold` ok: a holding with its fencing token, [acquired, stopped relying on it];
/// - `write`: a guarded write sent with `token`; ok = the resource accepted it, `seq` its
///   place in the resource's order of decisions.
/// Rules: holdings of different clients never overlap (mutual exclusion); holdings' tokens
/// strictly increase in the order they began; accepted writes' tokens strictly increase in
/// the resource's order (fencing); a write whose token is below one the resource already
/// accepted is rejected (stale writes).
[[nodiscard]] std::vector<violation> check_lock(const std::vector<event>& h);

/// Semaphores (issue 36). Reads:
/// - `hold` ok: an acquisition as logged when it was granted: `token` its fencing token, `id`
///   its number of permits (decimal; empty means 1), [granted, end of its validity];
/// - `release` (any ok): its holder stopped relying on the acquisition with that `token` at
///   `start_ns`, which ends the holding there when that comes before its validity's end.
/// A holder killed while holding logs no `release`: its holding lasts its whole lease.
/// Rules: at no instant do holdings add up to more than `permits` (at most N permits);
/// fencing tokens are never granted twice (fencing tokens unique).
[[nodiscard]] std::vector<violation> check_semaphore(const std::vector<event>& h,
                                                     std::uint64_t permits);

/// Read-write locks (issue 36). Reads `hold` and `release` as check_semaphore() does, with
/// `id` "read" (a share) or "write" (the exclusive hold).
/// Rules: an exclusive holding overlaps no holding of another client, share or exclusive
/// (writer alone); fencing tokens are never granted twice (fencing tokens unique).
[[nodiscard]] std::vector<violation> check_rw_lock(const std::vector<event>& h);

/// Rate limiters (issue 36). Reads `request` events: ok = allowed, `token` its cost (0 means
/// 1), decided by the server at some instant of [start_ns, end_ns].
/// Rule: over every span [a, b], the allowed requests that were wholly inside it cost at most
/// `burst + rate_per_second × (b - a)` (within the rate): the GCRA bound, whatever the
/// clients' clocks say.
[[nodiscard]] std::vector<violation> check_rate(const std::vector<event>& h, double rate_per_second,
                                                std::uint64_t burst);

/// Elections (master_selector, leader_elector, leader_task). Reads:
/// - `term` ok: a leadership as its client lived it, with its epoch: [first seen leading,
///   stopped leading], where the end is the earlier of the local deadline and the moment the
///   leadership was seen lost or resigned;
/// - `work`: leader work's guarded write with the epoch; ok = accepted, `seq` its place in the
///   resource's order.
/// Rules: terms of different clients never overlap (one leader at a time); accepted work was
/// invoked inside a term of its client with its epoch (work only while leading); terms'
/// epochs strictly increase in the order they began; accepted work's epochs never decrease in
/// the resource's order.
[[nodiscard]] std::vector<violation> check_election(const std::vector<event>& h);

/// Reliable queues. Reads:
/// - `push` ok: a push acknowledged to its producer, `id` the message; not ok: a push that
///   failed or whose reply was lost (the message may exist: it may be delivered, need not be);
/// - `deliver` ok: a pop that returned message `id` to consumer `client`;
/// - `ack` ok: an acknowledgement of `id` that the queue confirmed; not ok: an ack sent whose
///   outcome its client never learned (the reply was lost, or the client died first): it may
///   have removed the message, so it excuses the message's absence at the end, but counts as
///   no ack;
/// - `left`: message `id` found in one of the queue's lists at the end;
/// - `cut` / `killed` / `paused`: consumer `client` was partitioned away or SIGSTOPped over
///   [start_ns, end_ns] (logged from before the fault took effect), or SIGKILLed at
///   `start_ns`.
/// Rules: every acknowledged push is acked exactly once or still left at the end (nothing
/// lost, no double ack); nothing is delivered that was never pushed (or attempted); a message
/// delivered again had been delivered to a consumer that a fault hit between the two
/// deliveries (the fault's span overlaps theirs), or that nacked it after its delivery
/// (duplicates only from faults).
[[nodiscard]] std::vector<violation> check_queue(const std::vector<event>& h);

/// A job as the server holds it at the end of a jobs run (job_queue::get()).
struct job_end_state {
    std::string id;         ///< The job's id.
    std::string state;      ///< to_string(job_state): waiting, delayed, active, completed, ...
    unsigned attempts = 0;  ///< Attempts claimed so far (job_info::attempts).
    std::string result;     ///< Completed jobs: the handler's result, `<worker>:<attempt>`.
    std::string error;      ///< Failed and dead jobs: why.
};

/// The jobs part's own rules, beside check_queue() over its adds and runs: no job failed or
/// went dead (reruns under faults spend attempts, never the job), and a completed job's result
/// is its last attempt's, `<worker>:<attempts>` (a late settlement of an earlier attempt, by a
/// worker cut off or paused past its lease, must have been refused).
[[nodiscard]] std::vector<violation> check_job_results(const std::vector<job_end_state>& jobs);

/// Signals and barriers. Reads:
/// - `link` ok: waiter `client`'s subscription was up over [start_ns, end_ns];
/// - `signal` ok: signal `id` published over [start_ns, end_ns];
/// - `receive` ok: waiter `client` got signal `id` at `end_ns`;
/// - `arrive` ok: barrier party `client` arrived at generation `token`;
/// - `pass` ok: party `client` passed generation `token` at `end_ns`; the number of parties
///   is given by the `parties` argument.
/// Rules: every waiter receives every signal published wholly inside one of its link-up
/// intervals, and no signal twice; no party passes a generation before `parties` parties
/// arrived in it.
[[nodiscard]] std::vector<violation> check_signaling(const std::vector<event>& h,
                                                     std::size_t parties = 0);

/// One event as a line (`client op [start,end] ok token seq id`), for reports.
[[nodiscard]] std::string describe(const event& e);

/// One event as a log line: its fields separated by tabs, in declaration order, `ok` as 1/0,
/// ending with a newline. Client names and ids must not hold tabs or newlines.
[[nodiscard]] std::string to_log_line(const event& e);

/// Reads a log of to_log_line() lines (several clients' logs may be concatenated). A line cut
/// short (a client killed while writing it) is skipped, and counted in `skipped` if given.
/// @throws redcoord::error when the file cannot be read.
[[nodiscard]] std::vector<event> read_log(const std::string& path, std::size_t* skipped = nullptr);

/// Nanoseconds of CLOCK_MONOTONIC now: the clock every client of a history logs with.
[[nodiscard]] std::int64_t monotonic_ns() noexcept;

}  // namespace redcoord::testing::history
REDCOORD_API_END
