#pragma once
/// @file
/// The election runner: campaigns on its own thread, keeps the local leadership deadline and
/// delivers leadership callbacks in order (DESIGN.md §Election, seed 000 §选举算法).

#include <redcoord/core/pool.hpp>
#include <redcoord/election/election_options.hpp>
#include <redcoord/election/master_selector.hpp>

#include <boost/signals2/signal.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

namespace redcoord {

/// Why a leadership ended.
enum class revoke_reason {
    lost,        ///< A round found another holder (or a new epoch replaced ours).
    expired,     ///< The local deadline passed before a renewal was confirmed (server reachable).
    resigned,    ///< resign() or stop() gave it up.
    connection,  ///< The local deadline passed while the server could not be reached.
};

/// "lost", "expired", "resigned", "connection".
[[nodiscard]] std::string_view to_string(revoke_reason r) noexcept;

/// Campaigns in an election on a background thread and reports leadership.
///
/// Algorithm: every retry period the campaign thread runs master_selector::campaign_once();
/// a confirmed round makes (or keeps) this candidate leader until its local deadline
/// `sent_at + term - drift` (steady clock). A leader whose renewal is not confirmed by then
/// steps down by itself: is_leader() turns false at the deadline, and `revoked(expired)` (or
/// `revoked(connection)` when the last round failed on transport or was still unanswered at
/// the deadline) follows. Followers subscribe
/// (core `subscriber`) to the election's handoff channel and campaign at once when a leader
/// resigns.
///
/// Leadership ends by the elector's own state transitions, not by its signals: a leadership's
/// stop token (current_leadership()) is stopped, under the elector's lock, when a round finds
/// it lost, on resign()/stop(), and at the local deadline by a dedicated timer thread that runs
/// neither user code nor I/O. So a slow or throwing slot can delay the *notification*
/// `revoked`, but never is_leader() turning false or the stop of leader work (client-go cancels
/// OnStartedLeading's context from its renew loop in the same way).
///
/// Epochs: a new leadership's epoch is max(counter + 1, the server's TIME in microseconds, the
/// highest epoch this candidate has seen + 1) (see master_selector), so it is strictly greater
/// than every earlier epoch of the election as long as the counter key survives or the server
/// clock does not step back. Caveats (review m14): with `replicas == 0` an asynchronous
/// failover can lose the latest leadership together with its counter, and under an
/// `allkeys-*` maxmemory-policy the counter can be evicted; in both cases only the server
/// clock and the floor of candidates that saw the epoch keep epochs increasing, and a candidate
/// elected by a promoted replica may act while the old leader's deadline still runs. Use
/// `noeviction` or a `volatile-*` policy and `replicas >= 1` where epochs fence writes.
///
/// Threads: one campaign thread, one callback thread, one deadline timer thread, and the
/// handoff subscriber's reader. Nothing runs until start(). The destructor calls stop().
///
/// Callbacks: the signals below are delivered on ONE callback thread owned by the elector, in
/// the order the events happened, never concurrently; `revoked` only ever follows an
/// `elected` of the same leadership. A callback may call is_leader(), epoch() and
/// last_known_leader(), but must not call start(), stop(), resign() or destroy the elector.
/// An exception escaping a slot is swallowed by the elector; as in Boost.Signals2, it skips the
/// later slots of that one signal invocation, never later events. Disconnecting a slot does not
/// wait for a call of it already running: stop() the elector before destroying what slots use.
///
/// Thread-safety: every member function may be called from any thread (except as above).
class leader_elector {
public:
    /// Validates the settings; does not connect or start threads.
    /// @throws invalid_argument for a bad name or options (see resolve()).
    leader_elector(connection_pool& pool, std::string name, election_options opts = {});
    /// stop(): resigns if leading and joins every thread. Never throws.
    ~leader_elector();
    leader_elector(const leader_elector&) = delete;
    leader_elector& operator=(const leader_elector&) = delete;

    /// Starts the campaign, callback and deadline threads and the handoff subscriber (for a
    /// Sentinel endpoint it follows the current master); the first round runs at once. Calling
    /// it while running does nothing; after stop() it starts again. Does not wait for the
    /// server. Serialised with stop().
    /// @throws std::system_error when a thread cannot be started.
    void start();
    /// Stops campaigning, resigns if leading (best effort, errors swallowed), delivers the
    /// remaining callbacks and joins all threads. Blocks at most for a round in flight plus the
    /// resign (each bounded by the endpoint's connect and command timeouts). Never throws.
    /// Concurrent calls (e.g. the destructor and a shutdown thread) are serialised: each returns
    /// once the elector is stopped, and the threads are joined exactly once.
    void stop() noexcept;

    /// A leadership as seen at one instant: its epoch and a token that is stopped when it ends.
    struct leadership {
        /// The fencing token; 0 when not leading (then `stop` is already stopped).
        std::uint64_t epoch = 0;
        /// Stopped when this leadership ends: lost, resigned, stopped, or at its local deadline
        /// (steady clock), whatever the signals' slots do. std::stop_callback functions
        /// registered on it may run on an elector thread with the elector's lock held: they must
        /// not call this elector and should only hand the news on (request another stop,
        /// notify a condition variable).
        std::stop_token stop;
    };
    /// The current leadership, read atomically (epoch and token of the same leadership). Leader
    /// work should take both from here, not from `elected`. Thread-safe; no I/O.
    [[nodiscard]] leadership current_leadership() const;

    /// True only while leading and before the local deadline (steady clock).
    [[nodiscard]] bool is_leader() const noexcept;
    /// The fencing token of the current leadership; 0 when not leading.
    [[nodiscard]] std::uint64_t epoch() const noexcept;
    /// The local deadline of the current leadership; nullopt when not leading.
    [[nodiscard]] std::optional<std::chrono::steady_clock::time_point> deadline() const;
    /// The current holder's identity, read from Redis now (nullopt: nobody holds the selector).
    /// @throws connection_error, timeout_error, pool_exhausted, reply_error on failures.
    [[nodiscard]] std::optional<std::string> leader();
    /// The holder seen by the latest round or handoff signal, without I/O.
    [[nodiscard]] std::optional<std::string> last_known_leader() const;
    /// Gives up leadership: steps down locally at once (`revoked(resigned)` when it was
    /// leading), deletes the selector if still ours and publishes the handoff signal, then holds
    /// back from campaigning for one retry period (or until another candidate's handoff signal) so
    /// a follower takes over. Waits for a round
    /// in flight (at most one round trip). Returns true when the selector was deleted.
    /// @throws connection_error, timeout_error, pool_exhausted on transport failures (the local
    ///         step-down has happened; if the selector is still ours the elector may win it
    ///         back after the hold, under the same epoch).
    bool resign();

    /// This candidate's identity.
    [[nodiscard]] const std::string& identity() const noexcept;
    /// The election's settings with defaults filled in.
    [[nodiscard]] const resolved_election_options& options() const noexcept;
    /// Campaign rounds sent so far (successful or not).
    [[nodiscard]] std::uint64_t rounds() const noexcept;

    /// Fired with the epoch (fencing token) when this candidate becomes leader. A new leadership
    /// on the server always has a new, higher epoch; the same epoch is reported again only when
    /// a leader that stepped down locally (deadline passed) re-confirms the selector it still
    /// held on the server, so no one else led in between.
    boost::signals2::signal<void(std::uint64_t epoch)> elected;
    /// Fired when a leadership that was reported by `elected` ends. A notification only: it may
    /// come late behind slow slots, so leader work should watch current_leadership().stop (as
    /// leader_task does), which this signal's slots can neither skip nor delay.
    boost::signals2::signal<void(revoke_reason reason)> revoked;
    /// Fired when the observed holder changes (nullopt: none, e.g. after a resign).
    boost::signals2::signal<void(std::optional<std::string> identity)> leader_changed;

    struct impl;

private:
    std::unique_ptr<impl> impl_;
};

}  // namespace redcoord
