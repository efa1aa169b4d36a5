#pragma once
/// @file
/// A work queue that never loses a message: pops move each message atomically into the
/// consumer's own processing list, acks remove exactly that message, dead consumers' lists
/// are recovered, and poison messages end in a dead-letter list.
///
/// Sources: "Pattern: Reliable queue" of https://redis.io/commands/rpoplpush/ (move into a
/// backup list, LREM on completion), in its LMOVE/BLMOVE form (https://redis.io/commands/lmove/,
/// https://redis.io/commands/blmove/); leases, recovery and dead letters: docs/queue.md.

#include <redcoord/core/export.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/core/options.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/core/replication.hpp>
#include <redcoord/queue/envelope.hpp>
#include <redcoord/queue/limits.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord {

namespace detail {
struct queue_access;
}

/// Options of a reliable_queue. Durations are milliseconds.
struct reliable_queue_options {
    /// This consumer's id (its processing list and heartbeat key are named after it).
    /// Empty means a random 40-hex-digit id followed by `/<host>:<pid>`, the process's holder
    /// label (core/holder_label.hpp), so `inspect queue` and the dashboard show whose
    /// consumer it is. Otherwise a valid name (core/keys.hpp), unique
    /// among live consumers of the queue; a restarted process may reuse its id: whatever its
    /// previous incarnation left in flight is returned to the queue when it starts.
    std::string consumer_id;
    /// The visibility timeout: TTL of the consumer's heartbeat key (its lease). When the
    /// consumer stops heartbeating for this long, recover() hands its in-flight messages to
    /// others. Must be >= 100 ms.
    ///
    /// It is per *consumer*, not per message: the queue's upkeep renews the
    /// lease for as long as the process lives, so a handler that hangs, or a delivery the
    /// caller never acks or nacks, keeps its message in flight until close(), the
    /// destructor or the process's death; it is never redelivered while the consumer is
    /// alive. Handlers that may hang need their own deadline (and nack on it).
    /// It also bounds how long ack()/nack() retry a refused command (see ack()).
    std::chrono::milliseconds visibility_timeout{10000};
    /// How often the upkeep renews the heartbeat. Must be > 0 and at most half
    /// the visibility timeout.
    std::chrono::milliseconds heartbeat_interval{2000};
    /// How often the upkeep runs recover(); zero disables periodic recovery
    /// (recover() still runs once when the consumer starts, if recover_on_start).
    std::chrono::milliseconds recover_interval{5000};
    /// A message whose delivery failed this many times (expired lease or nack) goes to the
    /// dead-letter list instead of back to the queue. Must be >= 1.
    std::uint32_t max_attempts = 5;
    /// Run recover() when this consumer first pops.
    bool recover_on_start = true;
    /// Replicas that must acknowledge a push (Redis WAIT) before push()/push_batch() return
    /// (core/options.hpp, shared with the locks, the semaphore, the election and jobs):
    /// `replicas` zero (the default) returns on the master's reply alone. With n > 0 the LPUSH
    /// and `WAIT n timeout` go in one write on the same connection; when fewer than n replicas
    /// acknowledged within `timeout` (> 0 then; default 100 ms), the push throws
    /// replication_timeout (core/replication.hpp): the master has the message, but a failover
    /// could still lose it, so a caller that needs it durable pushes again (at-least-once: it
    /// may then be delivered twice). WAIT is not consensus: ask for as many replicas as
    /// Sentinel could promote. Acks, nacks and recovery do not wait.
    replication_options replication;
    /// How often the queue object re-checks its ready list for its pending async_pops
    /// (queue/async.hpp) without a push notice. push() and push_batch() publish a notice on
    /// the queue's channel and a pending async_pop tries again when it hears one; this slow
    /// re-check only covers a message no notice announced (pushed by another client with a
    /// plain LPUSH). It is one LLEN per period for all the object's pending pops, which try
    /// again only when it finds a message. While the pub/sub link is not confirmed, each
    /// pending pop re-checks by itself, faster (1 ms doubling up to 100 ms). Must be > 0.
    /// Default 1 s.
    std::chrono::milliseconds async_pop_recheck{1000};
    /// Key prefix (core/keys.hpp).
    std::string prefix{default_prefix};
    /// Longest payload push() and push_batch() accept, in bytes (limits.hpp); longer ones
    /// throw payload_too_large before anything is sent. Must be in 1..max_payload_limit.
    std::size_t max_payload = default_max_payload;
};

/// A message as stored: its identity, payload and history.
struct message {
    /// 32 hex digits for an enveloped message; for a raw payload pushed by another client,
    /// `raw-` + 16 hex digits of a hash of the payload (equal raw payloads are
    /// indistinguishable anyway: the identity is the exact bytes in the list).
    std::string id;
    std::string payload;         ///< The user's bytes.
    std::uint32_t attempts = 0;  ///< Earlier deliveries that ended without an ack.
    /// When it was pushed (wall clock); the epoch for raw payloads.
    std::chrono::system_clock::time_point enqueued_at{};
    bool raw = false;  ///< True for a payload pushed without an envelope.
};

/// One message delivered to a consumer, to be passed back to ack() or nack().
struct delivery : message {
    std::string consumer;  ///< The consumer whose processing list holds it.
    /// The exact element in the processing list (envelope or raw bytes). Opaque: ack and
    /// nack remove precisely this element (LREM count 1).
    std::string element;
};

/// What nack() does with a message.
enum class nack_action {
    requeue,      ///< Back to the queue with attempts + 1 (dead-lettered at max_attempts).
    dead_letter,  ///< Straight to the dead-letter list.
};

/// What ack_and_pop() came to.
struct ack_and_pop_result {
    /// The ack's answer, as ack() returns it: false when the message was no longer there.
    bool acked = false;
    /// The next message, moved into this consumer's processing list by the same call;
    /// nullopt when the queue was empty (or the move was not sent, see ack_and_pop()).
    std::optional<delivery> next;
};

/// A snapshot of a queue's state.
struct reliable_queue_stats {
    std::size_t ready = 0;  ///< Messages waiting in the queue.
    std::size_t dead = 0;   ///< Messages in the dead-letter list.
    /// In-flight messages per registered consumer id.
    std::map<std::string, std::size_t> in_flight;
    /// Registered consumers whose heartbeat has expired (recover() will reclaim them).
    std::vector<std::string> expired;
};

/// Counts returned by recover().
struct recovery_result {
    std::size_t requeued = 0;       ///< Messages returned to the queue.
    std::size_t dead_lettered = 0;  ///< Messages that reached max_attempts.
    std::size_t consumers = 0;      ///< Expired consumers removed from the consumer set.
};

/// An at-least-once work queue on Redis lists.
///
/// Keys (all in one Cluster slot): `<prefix>queue:{<name>}` (ready list, LPUSH in, popped
/// from the right), `...:processing:<consumer>` (in-flight), `...:heartbeat:<consumer>`
/// (lease, TTL = visibility timeout), `...:consumers` (set of registered consumers),
/// `...:dead` (dead-letter list).
///
/// Keyspace hygiene: only two keys persist without a TTL by design: the ready list (bounded
/// by what producers push and consumers have not taken; Redis deletes it when empty) and the
/// dead-letter list (bounded by what fails max_attempts times; drain it with requeue_dead()
/// or DEL; deleted when empty). A consumer's processing list and registry entry exist only
/// while it is started and live: close() (and the destructor) returns the list's messages,
/// deletes the list and the heartbeat key and removes the registry entry, and the registry
/// set disappears with its last member. A consumer that dies without close() leaves its
/// processing list and registry entry until the next recover() (any consumer's periodic one)
/// after its heartbeat's TTL, which removes both. Tested with 1,000 consumers opened and
/// closed.
///
/// Server configuration: run with `maxmemory-policy noeviction`. Under a
/// volatile-* or allkeys-* policy Redis may evict a heartbeat key before its TTL. The queue
/// notices on its next renewal (lease_losses() counts it) and from then on sends every move
/// together with a renewal, but a message moved with a plain BLMOVE in between could sit in a
/// list recover() has already unregistered, and be lost if the consumer then dies before its
/// next heartbeat re-registers it. The library has no log sink, so it does not warn itself:
/// check lease_losses() (or the server's policy) in your monitoring. A wall-clock step on the
/// server has the same effect as an early eviction.
///
/// Guarantees: a message is in exactly one of those lists at any time. A consumer moves a
/// message into its processing list only while its heartbeat key exists (pop()), and its
/// heartbeat key exists only while it is in the consumer set (both are set together, in
/// one script or transaction); recover() reclaims the list of every registered consumer
/// whose heartbeat is gone in one atomic script. So a consumer that dies at any point loses
/// nothing: its messages return to the queue (attempts + 1) within visibility_timeout +
/// recover_interval. Messages can be delivered more than once (a consumer dying after the
/// work but before its ack, or one whose lease lapsed). The lease reasoning assumes nobody
/// else deletes the heartbeat key and the server keeps its data (persistence on restart).
///
/// A queue object used only to push does nothing in the background. The first pop() returns
/// anything left in this consumer id's processing list, registers the consumer, runs
/// recover() once, and starts the consumer's upkeep, which renews the heartbeat and runs
/// recover() periodically; close() or the destructor stops it, returns unacknowledged
/// messages of this consumer to the queue and unregisters it. The upkeep runs on the timer
/// thread of the pool's runtime (core/runtime.hpp), shared by every queue, lock and elector
/// of that runtime: a queue owns no thread. The consumer lease decisions (when to renew, which
/// move a pop sends, how long to retry an ack) are made by a server-free engine,
/// queue/src/consumer_lease.hpp.
///
/// Transport errors: when a pop, ack or nack fails mid-flight (connection lost, timeout),
/// its effect on the server is unknown, for example a BLMOVE may have moved a message whose reply
/// never arrived. The consumer then retires its identity and continues under a fresh id
/// (`<consumer_id>~` + 16 random hex digits, never reused by a later process with the same
/// consumer_id; or a new random id). The retired lease is renewed only while
/// deliveries handed out under it are unsettled (so their handlers are not overtaken);
/// then it expires and recovery returns whatever the lost replies left behind, instead of
/// it sitting in a live consumer's processing list. close() returns the lists of all
/// identities at once.
///
/// @par Thread safety
/// All member functions may be called from any thread concurrently (each
/// call borrows its own pooled connection; the pool should have one connection per popping
/// thread plus one for the upkeep). The pool must outlive the queue.
///
/// @par Errors
/// The constructor throws invalid_argument; push() throws payload_too_large before sending and
/// replication_timeout when too few replicas acknowledged; pop() throws connection_error,
/// timeout_error, reply_error or protocol_error from core; ack() and nack() throw outcome_unknown
/// for a lost reply and retry refused commands while the lease holds; close() and the destructor
/// never throw.
///
/// @par Cost
/// push(): one LPUSH round trip (push_batch(): one for all; plus WAIT in the same write when
/// replication.replicas > 0); pop(): one LMOVE or BLMOVE per block while the lease is fresh, else the lease
/// renewal goes in the same script or in a MULTI/EXEC pipelined before the BLMOVE; ack(): one LREM;
/// ack_and_pop(): LREM and LMOVE in one round trip;
/// nack(): one EVALSHA; upkeep on the runtime's timer thread: one registering EVALSHA (the
/// heartbeat) every heartbeat_interval and one recovery EVALSHA every recover_interval.
class reliable_queue {
public:
    /// Makes a handle; nothing is sent and nothing runs in the background until the first pop().
    /// @throws invalid_argument for a bad name, consumer id or option.
    reliable_queue(connection_pool& pool, std::string_view name, reliable_queue_options opts = {});
    /// close(), swallowing errors. Never throws, never hangs longer than one command.
    ~reliable_queue();
    reliable_queue(const reliable_queue&) = delete;
    reliable_queue& operator=(const reliable_queue&) = delete;

    /// Pushes one message in a new envelope (LPUSH), and announces it to pending async_pop
    /// calls (PUBLISH on the queue's `:pushed` channel, in the same write; a refused notice
    /// is ignored). Returns its id (32 hex digits).
    /// @throws payload_too_large (limits.hpp) when longer than options().max_payload,
    ///         before anything is sent. After a protocol-error reply (the server's own bulk
    ///         limit is lower) the connection is discarded, never reused.
    /// When this returns, the server has the message (and, with options().replication.replicas = n > 0,
    /// so do at least n replicas). @throws replication_timeout (a timeout_error, from
    /// core/replication.hpp) when fewer than `replicas` replicas acknowledged within
    /// replica_timeout: the master has the message, a failover may lose it, pushing again
    /// is safe (at-least-once); connection_error, timeout_error, reply_error from core
    /// (outcome unknown on a transport error).
    std::string push(std::string_view payload);
    /// Pushes all messages in one round trip (one LPUSH); returns their ids in order.
    /// Messages are delivered in the order given. Errors as push() (replication_timeout
    /// covers the whole batch: every message is on the master, none is known durable).
    std::vector<std::string> push_batch(std::span<const std::string> payloads);
    /// Same, for a vector.
    std::vector<std::string> push_batch(const std::vector<std::string>& payloads) {
        return push_batch(std::span<const std::string>(payloads));
    }

    /// Takes the oldest message into this consumer's processing list, waiting up to
    /// `timeout` for one (zero or negative: do not wait; `milliseconds::max()`: until one
    /// comes, deadlines saturate as in core/deadline.hpp). Returns nullopt when nothing
    /// arrived in time. The caller must ack() or nack() the delivery.
    ///
    /// The move always happens while this consumer's lease is valid: when the lease known
    /// locally (steady clock, from the last renewal's send time + visibility_timeout)
    /// outlasts the command by a quarter of the visibility timeout, a plain LMOVE / BLMOVE
    /// (BRPOPLPUSH semantics) is sent, as cheap as raw Redis; otherwise the renewal goes in
    /// the same script (non-blocking) or in a MULTI/EXEC pipelined right before the BLMOVE.
    /// If the thread stalled past that bound anyway, the lease is renewed right after the
    /// move. If the renewal transaction fails while its BLMOVE still moved a message, the
    /// message is delivered all the same (never dropped) and re-registration is attempted at
    /// once. Once a renewal found the lease lost early (lease_losses()), plain moves are no
    /// longer used by this object. Blocks are bounded by half the visibility timeout and half the endpoint's
    /// command_timeout and repeated until `timeout`.
    /// @throws connection_error, timeout_error, reply_error, protocol_error from core; after
    ///         a transport error the consumer continues under a new id (see above).
    [[nodiscard]] std::optional<delivery> pop(std::chrono::milliseconds timeout);
    /// pop(), also ending (nullopt) once `stop` is requested: checked between blocks, so
    /// within one block (at most half the visibility timeout and half the endpoint's
    /// command_timeout) of the request. queue_worker::stop() relies on it.
    [[nodiscard]] std::optional<delivery> pop(std::chrono::milliseconds timeout,
                                              std::stop_token stop);
    /// pop() without waiting.
    [[nodiscard]] std::optional<delivery> try_pop() { return pop(std::chrono::milliseconds(0)); }

    /// Acknowledges: removes exactly this message from the processing list (LREM count 1
    /// of the exact element). Returns false when it was no longer there (recovered after a
    /// lapsed lease, or already acked/nacked): then another consumer may get it again.
    ///
    /// A command the server refuses (an error reply: BUSY, LOADING, READONLY, OOM,
    /// NOREPLICAS, ...) or that could not be sent (pool_exhausted, connect or handshake
    /// failure) changed nothing, so it is sent again, with back-off from 10 ms doubling to
    /// 500 ms, while this object knows the delivery's lease holds for another quarter of the
    /// visibility timeout, and for at most one visibility timeout in all.
    /// Only deliveries this object popped are retried; for others the lease is unknown and
    /// the first refusal is thrown. When the retries run out the delivery is given up: its
    /// consumer identity is retired (as after a transport error), so once its other
    /// deliveries are settled its lease lapses and recovery returns the message
    /// (attempts + 1) instead of it waiting in a live consumer's list; then the last error
    /// is thrown.
    /// @throws outcome_unknown (core/errors.hpp) when the command was sent and its reply
    ///         lost (timeout, broken link): it may or may not have been removed; the identity
    ///         is retired, so if it is still there recovery returns it;
    /// @throws reply_error, pool_exhausted, connection_error, timeout_error, auth_error
    ///         when refused or unsent until the retries ran out (see above).
    /// Blocks at most about one visibility timeout. Thread-safe.
    [[nodiscard]] bool ack(const delivery& d);
    /// Acknowledges `done` (as ack()) and takes the next message without waiting (as
    /// try_pop()) in one write and one round trip (LREM, then LMOVE, pipelined): a worker's
    /// loop costs one round trip per message instead of a pop and an ack. Returns the ack's
    /// answer and the next delivery (nullopt when the queue was empty: then wait with pop()).
    ///
    /// The next message moves under this consumer's current lease as pop() would: when the
    /// lease known locally is short, a renewal transaction (MULTI, SADD, SET PX, EXEC) goes
    /// between the two. A refused move (an error reply) moves nothing. A refused LREM removed
    /// nothing: the ack goes on as ack() does (retried while the lease holds, then thrown);
    /// if the move took a message meanwhile, that message is returned all the same with
    /// `acked` false, and `done` comes back through recovery, as after ack() gave up.
    /// If no connection can be had, nothing is sent and the ack goes on as ack() does.
    /// @throws outcome_unknown when the commands were sent and the replies lost: the ack's
    ///         outcome is unknown, and a next message the move may have taken returns through
    ///         recovery once the retired identity's lease lapses (as after pop()'s transport
    ///         errors); otherwise as ack().
    /// Thread-safe. The pattern: BullMQ's moveToCompleted with fetchNext (the completion and
    /// the next fetch in one call).
    [[nodiscard]] ack_and_pop_result ack_and_pop(const delivery& done);
    /// Gives a message back: requeue (attempts + 1, at the back of the queue; to the
    /// dead-letter list once attempts reaches max_attempts) or dead-letter it now. Atomic
    /// (one script). Returns false when it was no longer in the processing list.
    /// Retries, gives up and @throws exactly as ack().
    [[nodiscard]] bool nack(const delivery& d, nack_action action = nack_action::requeue);

    /// Returns the in-flight messages of every registered consumer whose heartbeat expired
    /// to the front of the queue (attempts + 1; dead-lettered at max_attempts), and
    /// unregisters those consumers, in one atomic script that iterates the consumer set
    /// (no SCAN/KEYS). Raw payloads get an envelope on the way. Safe to run from any
    /// process at any time. @throws as pop().
    recovery_result recover();

    /// Up to `limit` dead letters, oldest first (0: all). @throws as pop().
    [[nodiscard]] std::vector<message> dead_letters(std::size_t limit = 0);
    /// Moves up to `limit` dead letters (0: all), oldest first, back to the queue with
    /// attempts reset to 0. Returns how many moved. @throws as pop().
    std::size_t requeue_dead(std::size_t limit = 0);
    /// Counts, in one script. @throws as pop().
    [[nodiscard]] reliable_queue_stats stats();
    /// Messages waiting (LLEN). @throws as pop().
    [[nodiscard]] std::size_t size();

    /// Stops the upkeep (waiting for a run in progress), returns this consumer's unacknowledged messages to the
    /// queue (attempts + 1) and unregisters it. Later pops start the consumer again.
    /// Idempotent. @throws as pop() when the server cannot be reached (the heartbeat then
    /// simply expires and others recover the messages).
    void close();
    /// Unregisters this object's consumer id (its heartbeat key and its registry entry) when
    /// its processing list is empty, in one atomic script; a consumer with messages in flight
    /// is left alone. For a process that acks the last delivery of a short-lived consumer
    /// that is not this object's running one (`redcoord queue ack` after an anonymous
    /// `queue pop`), so the registry does not fill with finished consumers until their
    /// heartbeats lapse. Do not call it for a consumer that a live process still pops with:
    /// that process re-registers at its next heartbeat, but until then recovery sees it as
    /// gone. Returns true when it was unregistered. @throws as pop().
    bool retire_if_idle();

    /// This consumer's current id (see "Transport errors" above for when it changes).
    [[nodiscard]] std::string consumer_id() const;
    /// The current processing list's key.
    [[nodiscard]] std::string processing_key() const;
    /// The ready list's key.
    [[nodiscard]] const std::string& key() const noexcept;
    /// The dead-letter list's key.
    [[nodiscard]] const std::string& dead_key() const noexcept;
    /// The options given at construction.
    [[nodiscard]] const reliable_queue_options& options() const noexcept;
    /// Heartbeats that failed (server unreachable) since construction.
    [[nodiscard]] std::uint64_t heartbeat_failures() const noexcept;
    /// Acks and nacks sent again after the server refused them or no connection could be
    /// had, since construction.
    [[nodiscard]] std::uint64_t settle_retries() const noexcept;
    /// Renewals that found the lease already gone on the server before its local bound.
    [[nodiscard]] std::uint64_t lease_losses() const noexcept;

private:
    friend struct detail::queue_access;  // async_pop (async.hpp)
    struct impl;
    std::unique_ptr<impl> impl_;
};

}  // namespace redcoord

REDCOORD_API_END
