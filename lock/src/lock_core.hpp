#pragma once
// The one driver behind distributed_lock and redlock: the local gate, the wait (wait_policy
// through acquire_loop), the rounds of lock_engine over a lock_transport, and the holding's
// lifecycle (hold_state: commit, extension, lease timer, loss). The two public classes differ
// only in their transport and options.

#include <redcoord/core/detail/release_waiter.hpp>
#include <redcoord/core/holder_label.hpp>
#include <redcoord/lock/detail/async_start.hpp>

#include "hold_common.hpp"
#include "lock_engine.hpp"
#include "lock_transport.hpp"
#include "release_deferral.hpp"
#include "wait_policy.hpp"

#include <boost/signals2/connection.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace redcoord::detail {

struct lock_core_config {
    std::string_view kind;          // "lock" or "redlock", for messages
    std::string_view options_name;  // "lock_options" or "redlock_options", for messages
    std::string prefix;
    std::string label;  // resolved (resolve_holder_label): carried in each attempt's token
    std::chrono::milliseconds ttl{30000};
    double drift_factor = 0.01;
    bool watchdog = false;
    std::size_t max_extensions = 0;
    std::size_t replicas = 0;  // N = 1: WAIT acks of acquisitions and extensions
    std::chrono::milliseconds round_timeout{
        0};  // per-round deadline; zero: the endpoint's timeouts
    std::chrono::milliseconds handoff_after{10};  // a holder's turn while others wait (scripts.hpp)
    wait_settings waiting;
    std::function<void(const std::string&)> on_wait;  // log sink: what an acquire waits for
    bool keep_outcomes = false;                       // record last_outcomes(), with holder ids
    bool defer_release = false;  // unlock() may hold its release back (release_deferral.hpp)
};

// The fields lock_options and redlock_options share, under the same names.
template <class Options>
lock_core_config shared_config(const Options& o) {
    lock_core_config c;
    c.prefix = o.prefix;
    c.label = resolve_holder_label(o.label);
    c.ttl = o.timing.ttl;
    c.drift_factor = o.timing.drift_factor;
    c.watchdog = o.watchdog;
    c.max_extensions = o.max_extensions;
    c.waiting.retry_jitter = o.timing.retry_jitter;
    c.waiting.wake_jitter = o.timing.wake_jitter;
    c.waiting.max_retry_interval = o.timing.max_retry_interval;
    c.handoff_after = o.handoff_after;
    c.defer_release = o.defer_release;
    return c;
}

class lock_core : public hold_state {
public:
    // @throws invalid_argument for a bad resource name or, with the watchdog, a pool of
    //         max_size < 2 (its extension must never queue behind this object's own round).
    lock_core(std::unique_ptr<lock_transport> transport, std::string resource, lock_core_config c);
    // Stops the lease timer, sends a held-back release, releases if held (errors swallowed),
    // stops the release waiter.
    ~lock_core() override;

    // One acquire call, its duration observed (redcoord_lock_acquire_seconds).
    std::optional<lock_acquisition> acquire_until(lock_clock::time_point deadline,
                                                  bool unlimited = false) {
        return timed_acquire([&] { return acquire_once(deadline, unlimited); });
    }
    // Lockable::lock(): see distributed_lock::lock().
    void lock();
    // The asynchronous acquire (async.hpp) until `deadline`: `done` runs once on the event
    // loop. @throws invalid_argument for a lock it does not support, or when the gate is
    // taken (an acquire under way, or held).
    std::shared_ptr<async_operation> async_acquire_until(lock_clock::time_point deadline,
                                                         acquire_completion done);
    // The asynchronous release (async.hpp): `done` runs once on the event loop with true
    // (released), false (not ours any more) or nullopt (nothing held: nothing sent).
    // @throws invalid_argument for a lock async_acquire() does not support.
    std::shared_ptr<async_operation> async_release(async_completion<bool> done);
    // @throws invalid_argument for ttl <= 0.
    bool extend(std::chrono::milliseconds ttl);
    bool release();
    void unlock() noexcept;
    [[nodiscard]] boost::signals2::scoped_connection on_lost(
        const std::function<void(const std::string&)>& h);
    [[nodiscard]] std::vector<node_outcome> last_outcomes() const;
    [[nodiscard]] std::size_t size() const noexcept { return engine_.size(); }
    [[nodiscard]] const lock_core_config& config() const noexcept { return c_; }

private:
    friend class async_acquire_op;
    friend class async_release_op;
    template <class>
    friend class async_lock_io;
    struct attempt_result {
        std::optional<lock_acquisition> got;
        refusal why;
        bool floor_needed = false;
    };
    // A holding whose release unlock() held back (release_deferral.hpp).
    struct held_back {
        lock_acquisition held;
        bool floor = false;
    };
    std::optional<lock_acquisition> acquire_once(lock_clock::time_point deadline, bool unlimited);
    attempt_result attempt(ask what, const held_back* previous);
    // Sends the release of `held` to every node (or those in `only`) without waiting
    // (unlock's way).
    void send_release(const lock_acquisition& held, bool floor,
                      std::span<const std::size_t> only = {}) noexcept;
    std::optional<held_back> take_held_back();
    std::optional<lock_clock::time_point> flush_tick();
    // Resends `round` to the nodes its pools left unsent, within the engine's window.
    void resend_release(lock_round& round);
    static constexpr std::chrono::microseconds resend_pace{500};
    void give_back(const lock_round& acquire_round, const std::vector<std::size_t>& nodes,
                   const round_io& io);
    extend_result extend_round(const std::string& token, std::chrono::milliseconds ttl,
                               lock_clock::time_point t0) override;
    std::exception_ptr run(lock_round& round, const round_io& io);
    std::optional<std::chrono::milliseconds> io_budget() const;
    [[nodiscard]] bool cut_by_deadline() const;
    void rethrow_unless_cut(const std::exception_ptr& e) const;
    void note_wait(const std::string& why);
    [[nodiscard]] bool nothing_sent_while_waiting(const lock_round& round) const;
    static void pace_resend();
    release_waiter& waiter();
    std::optional<lock_acquisition> take_hold(bool& floor);
    // @throws invalid_argument for a Cluster node (the pipelined link reaches one server).
    void require_async_endpoints(std::string_view what) const;

    lock_core_config c_;
    std::unique_ptr<lock_transport> transport_;
    lock_engine engine_;
    std::vector<node_outcome> last_ REDCOORD_GUARDED_BY(mu);
    bool floor_needed_ REDCOORD_GUARDED_BY(mu) = false;  // of the current holding, for its release

    detail::mutex waiter_mu_;
    std::unique_ptr<release_waiter> waiter_ REDCOORD_GUARDED_BY(waiter_mu_);

    // What holding releases back takes (release_deferral.hpp): made with the object when
    // the options ask for it (defer_release), else never, since most lock objects do not and
    // this would cost each of them about 230 bytes.
    struct deferred_release {
        detail::mutex mu;
        std::optional<held_back> back REDCOORD_GUARDED_BY(mu);
        lock_clock::time_point due REDCOORD_GUARDED_BY(mu){};
        // The release the flush timer took last, until the next acquire call takes it in
        // turn: it travels on another connection than that call's attempt and may land after
        // it, so the attempt re-locks it (renewed in place if still there) instead of being
        // refused by it.
        std::optional<held_back> flushed REDCOORD_GUARDED_BY(mu);
        // Until when `flushed` may still be in flight: its sends and resends (the engine's
        // window) plus a command's flight.
        lock_clock::time_point flushed_until REDCOORD_GUARDED_BY(mu){};
        bool flush_armed REDCOORD_GUARDED_BY(mu) = false;
        std::unique_ptr<detail::timer> flush;  // sends a held-back release when it is due
        // the flush timer's release still being resent (its thread only)
        std::unique_ptr<lock_round> flushing;
        release_deferral deferral;  // only touched while the gate is held
    };
    static constexpr std::chrono::milliseconds flush_in_flight{100};
    const std::unique_ptr<deferred_release> deferred_;  // null without defer_release
    // The acquire call's bookkeeping of a held-back release (none without defer_release).
    void deferral_on_acquire();

    // Only touched while the gate is held:
    bool registered_ = false;  // refused since the last acquisition: may be named as a waiter
    std::string unreachable_;  // why the last round could not reach a majority (empty: it could)
    std::string last_note_;    // what on_wait was last told, and when
    lock_clock::time_point last_note_at_{};
};

}  // namespace redcoord::detail
