#pragma once
/// @file
/// A consumer runner: N threads popping from a reliable_queue and calling a handler, with a
/// graceful drain on stop.

#include <redcoord/core/detail/error_slot.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/queue/reliable_queue.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <stop_token>
#include <thread>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord {

/// What the handler decided for one delivery.
enum class handler_result {
    ack,          ///< Done: ack() it.
    requeue,      ///< Failed: nack(requeue), retried until max_attempts.
    dead_letter,  ///< Hopeless: nack(dead_letter).
};

/// Options of a queue_worker. Durations are milliseconds.
struct queue_worker_options {
    std::size_t threads = 1;  ///< Worker threads; must be >= 1.
    /// Longest single blocking pop (reliable_queue::pop). Must be > 0;
    /// `milliseconds::max()` is fine: an idle worker then waits in the server, it does not
    /// poll in a loop, and stop() still interrupts it between blocks.
    std::chrono::milliseconds poll_timeout{200};
    /// Pause after a failed pop (server unreachable) before trying again. Must be >= 0;
    /// stop() and request_stop() end the pause at once.
    std::chrono::milliseconds retry_delay{100};
};

/// Counters of a queue_worker, a snapshot.
struct queue_worker_stats {
    std::uint64_t acked = 0;     ///< Messages acked.
    std::uint64_t requeued = 0;  ///< Messages nacked back to the queue (handler said so or threw).
    std::uint64_t dead_lettered = 0;  ///< Messages nacked to the dead-letter list.
    std::uint64_t lost_leases =
        0;  ///< Acks/nacks refused: the message had been recovered meanwhile.
    /// Failures seen by workers: pops that threw (retried after retry_delay) plus `unsettled`.
    std::uint64_t errors = 0;
    /// Acks/nacks that failed for good: the server kept refusing them until the consumer's
    /// lease could no longer be vouched for (reliable_queue retries refusals such as BUSY,
    /// LOADING, READONLY, OOM, NOREPLICAS and an exhausted pool until then), or the reply was
    /// lost (outcome_unknown). Not counted as acked/requeued/dead_lettered. The message is not
    /// lost: its consumer identity was retired, so it returns through recovery (attempts + 1)
    /// once that lease lapses, and is delivered again, possibly after its work was done.
    std::uint64_t unsettled = 0;
};

/// Runs `threads` workers on one reliable_queue. Each worker pops (blocking up to
/// poll_timeout), calls the handler and acks or nacks according to its result; a handler
/// that throws gets its message requeued. An ack takes the worker's next message in the same
/// round trip (reliable_queue::ack_and_pop()), so a busy queue costs one command per message. The queue's upkeep (on the runtime's timer
/// thread) renews the lease and runs recover() periodically
/// (reliable_queue_options::recover_interval).
///
/// stop() drains gracefully: workers stop popping, the handler calls in progress finish and
/// their messages are acked or nacked (a message an ack took just before the stop is handled
/// too), then the threads end. A message popped but not
/// handled is never dropped: it is nacked, or (server unreachable) left in the processing
/// list for recovery.
///
/// @par Thread safety
/// start()/stop() from one controlling thread; stats() from any thread. The
/// handler runs on the worker threads, concurrently when threads > 1. The queue must
/// outlive the worker.
///
/// @par Errors
/// The constructor throws invalid_argument; start() throws std::system_error when a thread cannot
/// start; stop(), the destructor and stats() never throw. Failures of pops and acks are counted,
/// retried and kept in last_error(); a handler that throws gets its message requeued.
///
/// @par Cost
/// `threads` threads of its own, each a reliable_queue consumer loop. While the queue has
/// messages: one round trip per acked message (its ack and the next pop). A nack, or an ack that
/// found the queue empty, is followed by a blocking pop (see reliable_queue's Cost).
class queue_worker {
public:
    /// Called on a worker thread for each delivery.
    using handler = std::function<handler_result(const delivery&)>;

    /// @throws invalid_argument for an empty handler or a bad option.
    queue_worker(reliable_queue& queue, handler h, queue_worker_options opts = {});
    /// stop(). Never throws.
    ~queue_worker();
    queue_worker(const queue_worker&) = delete;
    queue_worker& operator=(const queue_worker&) = delete;

    /// Starts the worker threads (no-op when running). @throws std::system_error when a
    /// thread cannot be started.
    void start();
    /// Asks the workers to stop popping and returns at once.
    void request_stop() noexcept;
    /// request_stop(), then waits for in-flight handlers to finish and the threads to end
    /// (at most one handler call, its ack/nack, and one pop block: the smaller of
    /// poll_timeout, half the visibility timeout and half the endpoint's command_timeout).
    void stop() noexcept;
    /// True between start() and the end of stop().
    [[nodiscard]] bool running() const noexcept { return running_.load(); }
    /// Counters so far (each read atomically; the set is not one snapshot).
    [[nodiscard]] queue_worker_stats stats() const noexcept;
    /// The latest failure counted in stats().errors (a pop, ack or nack that threw), or null
    /// when there was none. The workers retry after retry_delay whatever it was, so this is
    /// how a caller sees, for example, a permission_error (the ACL user lacks a command the
    /// queue needs, see redcoord/queue/acl.hpp) that no retry will cure. Thread-safe.
    [[nodiscard]] std::exception_ptr last_error() const;

private:
    void run(std::stop_token stop);

    reliable_queue& queue_;
    handler handler_;
    queue_worker_options opts_;
    std::vector<std::thread> threads_;
    std::atomic<bool> stop_{false};
    std::atomic<bool> running_{false};
    std::stop_source stop_source_;
    detail::error_slot errors_;  // pops, acks and nacks that threw
    std::atomic<std::uint64_t> acked_{0}, requeued_{0}, dead_{0}, lost_{0}, unsettled_{0};
};

}  // namespace redcoord

REDCOORD_API_END
