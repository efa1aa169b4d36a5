#pragma once
/// @file
/// The election runner: campaigns on the runtime's timer thread, keeps the local leadership
/// deadline and delivers leadership callbacks in order.

#include <redcoord/core/export.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/election/election_options.hpp>
#include <redcoord/election/master_selector.hpp>
#include <redcoord/election/revoke_reason.hpp>

#include <boost/signals2/signal.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

REDCOORD_API_BEGIN
namespace redcoord {

namespace detail {
struct elector_access;
}

/// Campaigns in an election and reports leadership, on the shared threads of its pool's
/// runtime (redcoord::runtime); the elector itself owns no thread.
///
/// Algorithm: every retry period a campaign round (master_selector::campaign_once()) runs on the
/// runtime's timer thread; a confirmed round makes (or keeps) this candidate leader until its
/// local deadline `sent_at + term - drift` (steady clock). A leader whose renewal is not
/// confirmed by then steps down by itself: is_leader() turns false at the deadline, and
/// `revoked(expired)` (or `revoked(connection)` when the last round failed on transport or was
/// still unanswered at the deadline) follows. A leader's renewal waits for its reply at most
/// until that deadline. Followers listen to the election's handoff channel (through the
/// runtime's shared pub/sub link of the endpoint) and campaign at once when a leader resigns.
///
/// Leadership ends by the elector's own state transitions, not by its callbacks: a leadership's
/// stop token (current_leadership()) is stopped, under the elector's lock, when a round finds
/// it lost, on resign()/stop(), and at the local deadline by the elector's timer. So a slow or
/// throwing slot can delay the *notification* `revoked`, but never is_leader() turning false
/// or the stop of leader work (client-go cancels OnStartedLeading's context from its renew
/// loop in the same way). The timer has its own lane on the runtime's tick workers: a tick of
/// another object blocked on Redis I/O never delays the stop token (a leader's own round is
/// bounded by its lease); is_leader(), epoch() and current_leadership() read the clock.
///
/// Epochs: a new leadership's epoch is max(counter + 1, the server's TIME in microseconds, the
/// highest epoch this candidate has seen + 1) (see master_selector), so it is strictly greater
/// than every earlier epoch of the election as long as the counter key survives or the server
/// clock does not step back. Caveats: with `replication.replicas == 0` an asynchronous
/// failover can lose the latest leadership together with its counter, and under an
/// `allkeys-*` maxmemory-policy the counter can be evicted; in both cases only the server
/// clock and the floor of candidates that saw the epoch keep epochs increasing, and a candidate
/// elected by a promoted replica may act while the old leader's deadline still runs. Use
/// `noeviction` or a `volatile-*` policy and `replication.replicas >= 1` where epochs fence writes.
///
/// Threads: none of its own. Rounds and the deadline run on `pool.runtime()`'s timer thread,
/// callbacks on its callback thread, the handoff listener on its pub/sub reader. Nothing runs
/// until start(). The destructor calls stop().
///
/// Callbacks (on_elected(), on_revoked(), on_leader_changed()): slots run on the runtime's
/// callback thread, through a strand of this elector: in the order the events happened, one
/// at a time, never concurrently (the slots of one event in connection order); `revoked`
/// only ever follows an `elected` of the same leadership. The executor is
/// shared with the other objects of the runtime; a slot that blocks delays this elector's
/// later events, and others' callbacks only until the executor adds a thread (about 10 ms;
/// long work belongs on the application's threads, or in a leader_task, whose work has its
/// own strand and watches the leadership's stop token). A callback
/// may call is_leader(), epoch() and last_known_leader(), but must not call start(), stop(),
/// resign() or destroy the elector. An exception escaping a slot is swallowed by the elector; as in
/// Boost.Signals2, it skips the later slots of that one event, never later events.
/// Disconnecting a slot (or dropping its scoped_connection) does not wait for a call of it
/// already running: stop() the elector before destroying what slots use.
///
/// Waiting for leadership without a thread: async_wait_until_leader() in
/// redcoord/election/async.hpp (callbacks, futures, coroutines).
///
/// @par Thread safety
/// Every member function may be called from any thread (except as above).
///
/// @par Errors
/// The constructor throws invalid_argument; start() can throw std::system_error; stop(), the
/// destructor and the state queries never throw. Failures of the background rounds are not thrown:
/// they revoke a leadership (revoke_reason) and are kept in last_error(). resign() throws on
/// transport failures.
///
/// @par Cost
/// One master_selector round (one EVALSHA round trip, plus WAIT when replicas > 0) every retry
/// period, on the runtime's timer thread; one shared subscription to the election's hand-off
/// channel; resign() is one EVALSHA with a PUBLISH inside.
class leader_elector {
public:
    /// Validates the settings; does not connect or start threads.
    /// @throws invalid_argument for a bad name or options (see resolve()).
    leader_elector(connection_pool& pool, std::string name, election_options opts = {});
    /// stop(): resigns if leading; returns once no tick, callback or handoff handler of this
    /// elector runs. Never throws.
    ~leader_elector();
    leader_elector(const leader_elector&) = delete;
    leader_elector& operator=(const leader_elector&) = delete;

    /// Starts campaigning on the runtime's timer thread and listens to the handoff channel (for
    /// a Sentinel endpoint the runtime's link follows the current master); the first round runs
    /// at once. Calling it while running does nothing; after stop() it starts again. Does not
    /// wait for the server. Serialised with stop().
    /// @throws std::system_error when a runtime thread cannot be started.
    void start();
    /// Stops campaigning, resigns if leading (best effort, errors swallowed) and delivers the
    /// remaining callbacks: once it returns, no callback of this elector runs (until a new
    /// start()). Blocks at most for a round in flight plus the resign (each bounded by the
    /// endpoint's connect and command timeouts) and the callbacks already queued. Never throws.
    /// Concurrent calls (for example the destructor and a shutdown thread) are serialised: each
    /// returns once the elector is stopped.
    void stop() noexcept;

    /// A leadership as seen at one instant: its epoch and a token that is stopped when it ends.
    struct leadership {
        /// The fencing token; 0 when not leading (then `stop` is already stopped).
        std::uint64_t epoch = 0;
        /// Stopped when this leadership ends: lost, resigned, stopped, or at its local deadline
        /// (steady clock), whatever the on_*() slots do. std::stop_callback functions
        /// registered on it may run on the runtime's timer or pub/sub thread, or in a call of
        /// resign()/stop(), with the elector's lock held: they must not call this elector and
        /// should only hand the news on (request another stop, notify a condition variable).
        std::stop_token stop;
    };
    /// The current leadership, read atomically (epoch and token of the same leadership). Leader
    /// work should take both from here, not from an on_elected() slot. Thread-safe; no I/O.
    [[nodiscard]] leadership current_leadership() const;

    /// True only while leading and before the local deadline (steady clock).
    [[nodiscard]] bool is_leader() const noexcept;
    /// The fencing token of the current leadership; 0 when not leading.
    [[nodiscard]] std::uint64_t epoch() const noexcept;
    /// The local deadline of the current leadership, on the runtime's clock (runtime_clock: the
    /// steady clock unless a test advanced it); nullopt when not leading.
    [[nodiscard]] std::optional<std::chrono::steady_clock::time_point> deadline() const;
    /// The current holder's identity, read from Redis now (nullopt: nobody holds the selector).
    /// @throws connection_error, timeout_error, pool_exhausted, reply_error on failures.
    [[nodiscard]] std::optional<std::string> leader();
    /// The holder seen by the latest round or handoff signal, without I/O.
    [[nodiscard]] std::optional<std::string> last_known_leader() const;
    /// Gives up leadership: steps down locally at once (`revoked(resigned)` when it was
    /// leading), deletes the selector if still ours and publishes the handoff signal, then holds
    /// back from campaigning for two retry periods (or until another candidate's handoff signal)
    /// so a follower takes over, even one whose round is late and that missed the signal (a
    /// follower also checks at once whenever its handoff channel is (re)subscribed, since a
    /// signal sent before that is lost). Waits for a round
    /// in flight (at most one round trip). Returns true when the selector was deleted.
    /// @throws connection_error, timeout_error, pool_exhausted on transport failures (the local
    ///         step-down has happened; if the selector is still ours the elector may win it
    ///         back after the hold, under the same epoch).
    bool resign();

    /// This candidate's identity.
    [[nodiscard]] const std::string& identity() const noexcept;
    /// The election's settings with defaults filled in.
    [[nodiscard]] const resolved_election_options& options() const noexcept;
    /// Why the elector cannot campaign, or null: the exception of the latest campaign round
    /// when it failed (rounds run on the runtime's timer thread, so their errors do not reach
    /// the caller otherwise; null again after a round that got an answer), or a
    /// permission_error when the server refused the handoff channel's SUBSCRIBE. A
    /// permission_error here (the ACL user lacks a command, key or channel, see
    /// redcoord/election/acl.hpp) will not go away by itself: rounds keep failing until the
    /// user is fixed. Thread-safe; waits for a start() or stop() under way; no I/O.
    [[nodiscard]] std::exception_ptr last_error() const;
    /// Campaign rounds sent so far (successful or not).
    [[nodiscard]] std::uint64_t rounds() const noexcept;

    /// A callback for on_elected(): the epoch (fencing token) of the leadership.
    using elected_slot = std::function<void(std::uint64_t epoch)>;
    /// A callback for on_revoked(): why the leadership ended.
    using revoked_slot = std::function<void(revoke_reason reason)>;
    /// A callback for on_leader_changed(): the new holder (nullopt: none).
    using leader_changed_slot = std::function<void(std::optional<std::string> identity)>;

    /// Calls `slot` with the epoch (fencing token) whenever this candidate becomes leader. A
    /// new leadership on the server always has a new, higher epoch; the same epoch is reported
    /// again only when a leader that stepped down locally (deadline passed) re-confirms the
    /// selector it still held on the server, so no one else led in between.
    /// Thread and order: see "Callbacks" in the class comment (the runtime's callback thread,
    /// in event order, one at a time). The slot runs until the returned connection is
    /// disconnected or destroyed: dropping it disconnects at once, so keep it for as long as
    /// the slot should run. Disconnecting does not wait for a call already running.
    /// Thread-safety: may be called from any thread, also before start() or from a slot.
    [[nodiscard]] boost::signals2::scoped_connection on_elected(elected_slot slot);
    /// Calls `slot` with the reason whenever a leadership that was reported to the on_elected()
    /// slots ends. A notification only: it may come late behind slow slots, so leader work
    /// should watch current_leadership().stop (as leader_task does), which slots can neither
    /// skip nor delay. Thread, order and the returned connection: as on_elected().
    [[nodiscard]] boost::signals2::scoped_connection on_revoked(revoked_slot slot);
    /// Calls `slot` whenever the observed holder changes (nullopt: none, for example after a
    /// resign).
    /// Thread, order and the returned connection: as on_elected().
    [[nodiscard]] boost::signals2::scoped_connection on_leader_changed(leader_changed_slot slot);

private:
    friend struct detail::elector_access;  // the asynchronous wait and leader_task
    // Private, so slots are added only through on_*() and held by a scoped_connection.
    boost::signals2::signal<void(std::uint64_t epoch)> elected_;
    boost::signals2::signal<void(revoke_reason reason)> revoked_;
    boost::signals2::signal<void(std::optional<std::string> identity)> leader_changed_;
    struct impl;
    std::unique_ptr<impl> impl_;
};

}  // namespace redcoord

REDCOORD_API_END
