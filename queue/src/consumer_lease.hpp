#pragma once
// The reliable queue's consumer lease engine, sans I/O: it decides when a consumer renews its
// heartbeat, how each pop moves a message (plain LMOVE/BLMOVE while the lease surely outlives
// the command, a renewal in the same script or transaction otherwise), how long a refused ack
// or nack is retried, when a consumer identity is retired, and when recovery runs.
//
// No sockets, threads, mutexes or clock reads: every call takes `now` (steady clock) and the
// outcome of the command the driver sent, and returns what to do next. reliable_queue.cpp is
// the driver; it serialises calls with its own mutex. Tested without a server in
// tests/unit/queue/consumer_lease_test.cpp.
//
// The safety argument in one place: the heartbeat key's expiry on the server is set when a
// renewal *arrives*, so `send time + visibility_timeout` is a lower bound of it (the engine's
// `lease_until`). A move is sent as a plain command only when that bound outlasts the
// longest block by `margin` (a quarter of the visibility timeout), which covers the stall
// between the decision and the command's arrival. A refused ack/nack is retried only while
// the bound outlasts the next attempt by the same margin. So, as long as the request side of
// the network plus local stalls stay under the margin, no move and no retried settle reaches
// the server after the lease it counted on has expired there.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace redcoord::detail {

/// The lease settings of one consumer (reliable_queue_options' fields of the same names).
struct lease_timing {
    std::chrono::milliseconds visibility_timeout{10000};  ///< TTL of the heartbeat key.
    std::chrono::milliseconds heartbeat_interval{2000};   ///< Renewal period.
    std::chrono::milliseconds recover_interval{5000};     ///< Recovery period; 0: only at start.
    bool recover_on_start = true;  ///< Recover once when the consumer starts.
};

/// How a pop moves its message.
enum class move_kind {
    none,             ///< Do not send anything: the pop ends with nothing.
    plain,            ///< LMOVE (block 0) or BLMOVE: the known lease outlives it.
    renew_then_move,  ///< Renewal + LMOVE in one script (block 0), or MULTI/renew/EXEC + BLMOVE.
};

/// One step of a pop.
struct move_plan {
    move_kind kind = move_kind::none;
    std::chrono::milliseconds block{0};           ///< 0: non-blocking LMOVE; else BLMOVE's timeout.
    std::chrono::milliseconds reply_deadline{0};  ///< For the blocking command (0: none).
};

/// What the driver does after a refused/unsent, lost or successful ack/nack.
enum class settle_verdict {
    done,             ///< The reply arrived: return it.
    retry,            ///< Refused or unsent: wait `settle_step::wait`, then send again.
    give_up,          ///< Refused or unsent past the lease: rethrow (identity retired if current).
    outcome_unknown,  ///< Sent, reply lost: throw outcome_unknown (identity retired if current).
};

/// The engine's answer to one ack/nack attempt.
struct settle_step {
    settle_verdict verdict = settle_verdict::done;
    std::chrono::milliseconds wait{0};  ///< Back-off before the retry.
};

/// What one ack/nack attempt came to.
enum class settle_attempt {
    replied,     ///< The server answered (whatever it answered).
    refused,     ///< Error reply, or never sent (no connection): nothing changed on the server.
    reply_lost,  ///< Sent, then the link failed or timed out: the outcome is unknown.
};

/// How a pop ended.
enum class pop_end {
    delivered,        ///< A message was moved and handed to the caller (settled later).
    empty,            ///< Nothing arrived in time, or stop was requested.
    refused,          ///< The server refused the command: nothing moved.
    transport_error,  ///< A move may have happened without its reply: retire the identity.
};

/// The consumer lease engine of one reliable_queue object (see the file comment).
class consumer_lease {
public:
    using clock_type = std::chrono::steady_clock;
    using time_point = clock_type::time_point;
    /// A consumer identity of this object; stable while the engine remembers it.
    using ref = std::uint64_t;

    /// One identity as the driver needs it.
    struct identity_view {
        ref who = 0;
        std::string id;
    };

    /// Work the periodic upkeep asks for.
    struct upkeep {
        std::vector<identity_view> renew;  ///< Heartbeats to send (current first).
        bool recover = false;              ///< Run recover() afterwards.
    };

    /// An ongoing pop.
    struct pop_ticket {
        ref who = 0;
        std::string id;
        time_point deadline{};
        bool first = true;
    };

    /// An ongoing ack or nack.
    struct settle_ticket {
        std::optional<ref> owner;  ///< Empty: not popped through this object (lease unknown).
        time_point give_up{};
        std::chrono::milliseconds backoff{0};
    };

    /// Back-off between attempts of a refused ack or nack: 10 ms, doubling to 500 ms.
    static constexpr std::chrono::milliseconds first_settle_backoff{10}, max_settle_backoff{500};

    /// `first_id` is the first identity's id; `fresh_id` makes the id of each successor when
    /// an identity is retired (random in the driver, scripted in tests).
    consumer_lease(lease_timing timing, std::string first_id,
                   std::function<std::string()> fresh_id);

    /// The margin a lease must keep beyond a command: a quarter of the visibility timeout.
    [[nodiscard]] std::chrono::milliseconds margin() const noexcept {
        return timing_.visibility_timeout / 4;
    }
    [[nodiscard]] const lease_timing& timing() const noexcept { return timing_; }

    // --- start and close ----------------------------------------------------------------

    /// True between started() and close().
    [[nodiscard]] bool running() const noexcept { return running_; }
    /// The identity to release (its leftovers from an earlier process) and register when the
    /// consumer starts; then the driver recovers if timing().recover_on_start.
    [[nodiscard]] identity_view starting() const;
    /// The start-up registration is done: the periodic upkeep begins at `now`.
    void started(time_point now);
    /// Stops the upkeep and forgets every lease; returns every identity whose processing list
    /// the driver must release (retired ones first, the current one last). The current id
    /// stays for a later start.
    std::vector<identity_view> close();

    // --- renewals -----------------------------------------------------------------------

    /// A renewal of `who` sent at `sent` went through. `intact`: the reply said the consumer
    /// was still registered with its heartbeat key present (nullopt: not asked). Returns true
    /// when the server had dropped the lease before the local bound (eviction, clock step,
    /// manual DEL): from then on every move goes with a renewal.
    bool renewed(ref who, time_point sent, std::optional<bool> intact = std::nullopt);
    /// The local lower bound of `who`'s lease (time_point{} when unknown or forgotten).
    [[nodiscard]] time_point lease_until(ref who) const;
    /// True once a renewal found a lease lost early.
    [[nodiscard]] bool distrusts_lease() const noexcept { return distrust_; }

    // --- periodic upkeep ----------------------------------------------------------------

    /// Heartbeats and recovery due at `now`; forgets retired identities whose lease ran out
    /// long ago. Nothing while not running.
    upkeep tick(time_point now);
    /// When tick() has work next (nullopt while not running).
    [[nodiscard]] std::optional<time_point> next_due() const;

    // --- pops ---------------------------------------------------------------------------

    /// A pop of up to `timeout` starts under the current identity, which counts it as
    /// outstanding before the move (so it is renewed even if retired meanwhile).
    pop_ticket begin_pop(time_point now, std::chrono::milliseconds timeout);
    /// The next command of the pop; kind none ends it with nothing. `command_timeout` is the
    /// connection's default reply deadline (0: none).
    move_plan plan_move(pop_ticket& t, time_point now, bool stop_requested,
                        std::chrono::milliseconds command_timeout) const;
    /// A move sent at `sent` came back at `now`. `renewal_ok`: for renew_then_move, whether
    /// the renewal part went through (the script ran, or MULTI..EXEC had no error); ignored
    /// for plain. `moved`: a message was moved. Returns true when the driver must renew
    /// `t.who` at once (a message moved while the lease bound was short, or moved although
    /// its renewal failed). For renew_then_move with neither renewal nor move,
    /// the driver throws.
    bool moved(const pop_ticket& t, move_kind kind, time_point sent, time_point now,
               bool renewal_ok, bool moved);
    /// The pop ended. A transport error retires the identity (if still current).
    void end_pop(const pop_ticket& t, pop_end how);

    // --- acks and nacks -----------------------------------------------------------------

    /// An ack or nack of a delivery of consumer `consumer` starts at `now`.
    [[nodiscard]] settle_ticket begin_settle(const std::string& consumer, time_point now) const;
    /// One attempt ended at `now`: return, retry after a back-off, or give up.
    settle_step settle(settle_ticket& t, settle_attempt what, time_point now);

    // --- identities ---------------------------------------------------------------------

    /// The current identity.
    [[nodiscard]] identity_view current() const;
    /// Retires `who` if it is still current: a fresh identity takes over; `who` is renewed
    /// while deliveries it handed out are outstanding, then left to expire and be recovered.
    /// Returns true when it was current.
    bool retire(ref who);
    /// Deliveries popped under `who` and not yet settled (0 when forgotten).
    [[nodiscard]] long outstanding(ref who) const;
    /// Identities remembered: the current one and retired ones not yet forgotten.
    [[nodiscard]] std::size_t identities() const noexcept { return ids_.size(); }

private:
    struct identity {
        ref who = 0;
        std::string id;
        time_point lease_until{};  // lower bound of the heartbeat key's expiry
        long outstanding = 0;      // deliveries popped and not settled (and pops in flight)
    };

    identity* find(ref who);
    const identity* find(ref who) const;
    identity& current_identity() { return ids_.back(); }
    const identity& current_identity() const { return ids_.back(); }
    void release(ref who);

    lease_timing timing_;
    std::function<std::string()> fresh_id_;
    // Retired identities first, the current one last.
    std::vector<identity> ids_;
    ref next_ref_ = 1;
    bool distrust_ = false;
    bool running_ = false;
    time_point next_heartbeat_{}, next_recover_{};
};

}  // namespace redcoord::detail
