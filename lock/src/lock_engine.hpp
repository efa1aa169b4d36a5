#pragma once
// The decisions of one lock round over N nodes, without I/O: N = 1 is the single-instance
// lock (optionally with WAIT for replicas), N > 1 is Redlock (the redis.io page "Distributed Locks with Redis", "The Redlock
// algorithm"; docs/lock.md). A round says what to send (a command as data), takes each node's outcome with
// the time it arrived, and gives the verdict: granted or not (quorum, validity = ttl -
// elapsed - drift, fencing token), which nodes to give the key back to, extended or lost,
// released or unknown, who holds the lock. It owns no socket, thread, mutex or clock read:
// drivers (lock_transport.hpp) do the I/O, tests feed scripted replies and a fake clock.

#include <redcoord/core/node_result.hpp>
#include <redcoord/core/options.hpp>
#include <redcoord/lock/acquisition.hpp>
#include <redcoord/lock/node_outcome.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace redcoord {
class script;  // only pointed to: a node_command names the script its driver sends
}

namespace redcoord::detail {

using lock_clock = std::chrono::steady_clock;

// The Redlock page's drift allowance, shared with the limit part (core/options.hpp).
using redcoord::clock_drift;

/// `ttl - elapsed - drift`, in microseconds; zero or negative means "not valid".
[[nodiscard]] std::chrono::microseconds validity(std::chrono::milliseconds ttl,
                                                 std::chrono::microseconds elapsed,
                                                 double drift_factor) noexcept;

/// The majority of `n` nodes: `n / 2 + 1` (the Redlock page's step 3). `n` must be >= 1.
[[nodiscard]] constexpr std::size_t quorum(std::size_t n) noexcept { return n / 2 + 1; }

/// How a quorum round stands after some nodes answered.
enum class quorum_state {
    undecided,    ///< Neither a majority of yes nor enough no's yet.
    reached,      ///< At least quorum(n) nodes said yes.
    refused,      ///< A majority can no longer be reached, and not because nodes are down.
    unreachable,  ///< More than n - quorum(n) nodes are down/hung/erroring: no majority possible.
};

/// Decides a round of `n` nodes with `yes` yes-answers, `no` no-answers and `failed`
/// nodes that gave no usable answer.
[[nodiscard]] quorum_state decide(std::size_t n, std::size_t yes, std::size_t no,
                                  std::size_t failed) noexcept;

// What an attempt asks of a refusal.
enum class ask {
    nothing,  // just try (try_lock's hot path: two arguments, no extra work on the server)
    holder,   // also report who holds it
    mark,     // report who holds it and mark its key: its release will publish
};

// What a refused attempt learned.
struct refusal {
    // One other client holds the lock (the same holding on a majority of the nodes).
    bool one_holder = false;
    // Its holding's id; empty when not asked for or unknown.
    std::string holder;
    // Its remaining TTL in ms; < 0 when unknown or without expiry.
    std::int64_t pttl = -2;
    // What is left of its turn (one_holder), in ms: it may re-acquire at will until then.
    std::int64_t turn_left = 0;
    // The lock is free, but our turn is over and someone else waits: we yield.
    bool yielding = false;
    // No majority could be reached because nodes are down (refused, reset, erroring): the
    // retry backs off, growing up to max_retry_interval, instead of re-trying every
    // retry_delay against nodes that answer "no" in microseconds.
    bool down = false;
};

// How an extension ended.
enum class extend_result {
    extended,       // confirmed (by a majority / the master and its replicas): validity moved
    not_held,       // nothing held, or another holding than the one asked for
    budget_spent,   // max_extensions used up: the validity stays; its end is reported as a loss
    lost,           // the key is gone or someone else's, or the validity passed: lost() is true
    not_confirmed,  // reply lost, nodes unreachable or replicas did not acknowledge: the old
                    // validity stands (shortened if the request asked for less), not lost yet
};

// A command for every node of a round, as data: the script with its keys and arguments. The
// views point into the round that made it.
struct node_command {
    const script* lua = nullptr;
    std::array<std::string_view, 4> key_store{};
    std::size_t nkeys = 0;
    std::array<std::string_view, 10> arg_store{};
    std::size_t nargs = 0;

    [[nodiscard]] std::span<const std::string_view> keys() const {
        return {key_store.data(), nkeys};
    }
    [[nodiscard]] std::span<const std::string_view> args() const {
        return {arg_store.data(), nargs};
    }
};

enum class round_kind {
    acquire,
    extend,
    release
};

// One round in progress: its command, and each node's outcome as it arrives. The command's
// views point into the round: keep the round in place while they are in use.
class lock_round {
public:
    lock_round(round_kind kind, std::size_t n, lock_clock::time_point start,
               lock_clock::time_point deadline);

    // Node `node`'s outcome as the transport got it, at `now`: a reply (an error reply
    // included), a timeout, a broken link, a busy pool, a connect under way, or `pending` (sent,
    // not waited for). A reply after the round's deadline counts as a timeout: too late to
    // vouch for anything. `acks`: replicas that acknowledged it (WAIT, N = 1). Replaces what
    // the node had.
    void on_result(std::size_t node, const node_result& r, lock_clock::time_point now,
                   std::optional<std::size_t> acks = std::nullopt);
    // Nothing reached `node` (its pool gave no connection: busy, connecting or down), so it
    // cannot hold anything of this round.
    void on_not_sent(std::size_t node, node_outcome::status why, std::string detail);

    // True once the verdict cannot change with more outcomes: a majority either way.
    [[nodiscard]] bool decided() const;
    [[nodiscard]] const std::vector<node_outcome>& outcomes() const noexcept { return outs_; }
    [[nodiscard]] round_kind kind() const noexcept { return kind_; }
    [[nodiscard]] std::size_t size() const noexcept { return outs_.size(); }
    [[nodiscard]] lock_clock::time_point start() const noexcept { return start_; }
    [[nodiscard]] lock_clock::time_point deadline() const noexcept { return deadline_; }
    // The command of this round (valid while the round lives and is not moved).
    [[nodiscard]] node_command command() const;
    [[nodiscard]] const std::string& token() const noexcept { return token_; }
    // Nodes nothing reached (busy pool, connect under way): safe to send again.
    [[nodiscard]] std::vector<std::size_t> unsent() const;

private:
    friend class lock_engine;
    struct tally {
        std::size_t yes = 0, no = 0, failed = 0, unconfirmed = 0;
    };
    [[nodiscard]] tally count() const;
    [[nodiscard]] quorum_state state() const;

    round_kind kind_;
    lock_clock::time_point start_, deadline_;
    lock_clock::time_point first_;  // the first send: a resend's window counts from here
    bool every_node_ = false;  // a give-back: resent until every node got it, whatever the verdict
    std::vector<node_outcome> outs_;
    // Per node: has an outcome; may hold our key (acquire: give it back); granted by the
    // master but acknowledged by too few replicas.
    std::vector<char> flags_;
    std::size_t replicas_ = 0;
    // The command's parts.
    const script* lua_ = nullptr;
    std::string_view key_, fence_key_, turn_key_, waiting_key_;
    std::string token_, arg2_, arg3_;
    std::string_view owner_, turn_arg_, grace_arg_;
    std::string previous_, floor_arg_, registered_arg_;
    std::string_view tombstone_arg_;
    std::size_t nkeys_ = 0, nargs_ = 0;
};

// What an acquire round decided.
struct acquire_verdict {
    std::optional<lock_acquisition> got;  // granted
    bool floor_needed = false;            // granted: the release must raise the nodes' counters
    refusal why;                          // not granted: what the refusals said
    std::vector<std::size_t> give_back;   // nodes that may hold our key: release there (step 5)
    std::string unreachable;              // no majority reachable: why, for the caller
};

enum class release_verdict {
    released,
    not_ours,
    unknown
};

// The fixed part of a lock: who it is, its keys and its timing.
struct lock_engine_config {
    std::size_t nodes = 1;
    std::string label;  // "redlock 'res'", for messages
    // The keys are views: whoever makes the engine keeps the strings alive for its life (the
    // lock object's hold_state does), so 10,000 lock objects do not each hold them twice.
    std::string_view key, fence_key;
    // Bounded unfairness (scripts.hpp): the turn and waiting keys, this object's owner id, its
    // turn and the grace a yielding owner gives waiters. An empty owner: no fairness.
    std::string_view turn_key, waiting_key;
    std::string owner;
    std::chrono::milliseconds handoff_after{10};
    std::chrono::milliseconds grace{50};
    std::chrono::milliseconds ttl{30000};
    double drift_factor = 0.01;
    std::size_t replicas = 0;                    // WAIT acks an acquisition/extension needs (N = 1)
    std::chrono::milliseconds round_timeout{0};  // per-round deadline; zero: none (N = 1)
    // Refusals of a zero-wait attempt name the holder too (redlock: last_outcomes() reports
    // it); otherwise such an attempt sends two arguments and learns only the PTTL.
    bool name_holders = false;
    // Releases leave a tombstone where the key is not theirs, and attempts honour them (N > 1:
    // an acquire round decided at a majority leaves slower nodes in flight, which a release
    // on another connection could overtake; scripts.hpp).
    bool tombstones = false;
    // How long after its first send a release keeps resending to the nodes nothing reached
    // (busy pool, connect under way); zero: never. The keys expire after their TTL anyway.
    std::chrono::milliseconds resend_window{0};
};

// What an attempt carries besides its token (with fairness only; scripts.hpp).
struct attempt_context {
    // The previous holding of this object whose release was held back: renewed in place
    // (re-lock) if its key still holds it, or released if this object must yield.
    const lock_acquisition* previous = nullptr;
    bool previous_floor = false;  // that holding's release had to raise the fencing counters
    // This object was refused since its last acquisition, so it may be named as a waiter.
    bool registered = false;
};

// The lock's decisions. Immutable after construction: share it between threads.
class lock_engine {
public:
    explicit lock_engine(lock_engine_config c);

    [[nodiscard]] const lock_engine_config& config() const noexcept { return c_; }
    [[nodiscard]] std::size_t size() const noexcept { return c_.nodes; }

    // Step 2: the acquire script with `token` on every node. With ask::nothing (and not
    // name_holders) the refusal carries only the holder's PTTL; ask::mark also marks the
    // holder's key. With an owner id, the fairness keys and arguments go along.
    [[nodiscard]] lock_round acquire(std::string token, ask what, lock_clock::time_point now,
                                     const attempt_context& ctx = {}) const;
    // Steps 3-5: granted iff a majority said yes (each confirmed by `replicas` for N = 1)
    // and validity is left at `now`; otherwise the nodes that may hold our key, and what the
    // refusals tell about the holder (one holding on a majority, or a split vote, or nodes down).
    [[nodiscard]] acquire_verdict decide_acquire(const lock_round& r,
                                                 lock_clock::time_point now) const;
    // The release of an acquire round's token (step 5's clean-up; no fencing floor). Nodes a
    // busy pool left unsent are resent until every node given got it (see resend).
    [[nodiscard]] lock_round give_back(const lock_round& acquire_round,
                                       lock_clock::time_point now) const;

    // A compare-and-pexpire of `token` to `ttl` on every node.
    [[nodiscard]] lock_round extend(std::string token, std::chrono::milliseconds ttl,
                                    lock_clock::time_point now) const;
    // Extended iff a majority (confirmed by `replicas`) did so with validity left for `ttl`
    // at `now`; lost once a majority can no longer say yes because the key is not ours;
    // otherwise not confirmed.
    [[nodiscard]] extend_result decide_extend(const lock_round& r, std::chrono::milliseconds ttl,
                                              lock_clock::time_point now) const;

    // The compare-and-delete of `held`; with `floor_needed`, it also raises each node's
    // fencing counter to the held token.
    [[nodiscard]] lock_round release(const lock_acquisition& held, bool floor_needed,
                                     lock_clock::time_point now) const;
    [[nodiscard]] release_verdict decide_release(const lock_round& r) const;
    // A release (or an unlock's detached send) whose verdict is still open and whose round left
    // nodes unsent because their pools were busy or still connecting: those nodes, to send
    // again (only those: the others keep their answers), reopened in `r` for a new round
    // deadline from `now`. Empty once decided, when every node was sent, or after
    // resend_window. Nothing was sent to them, so a resend cannot delete anything twice.
    [[nodiscard]] std::vector<std::size_t> resend(lock_round& r, lock_clock::time_point now) const;
    // Why a release is unknown, for outcome_unknown.
    [[nodiscard]] std::string release_unknown(const lock_round& r) const;

private:
    [[nodiscard]] lock_round make_round(round_kind k, lock_clock::time_point now) const;

    lock_engine_config c_;
    std::string ttl_arg_, turn_arg_, grace_arg_;
};

}  // namespace redcoord::detail
