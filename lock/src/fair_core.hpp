#pragma once
// fair_lock's core, shared by its blocking driver (fair_lock.cpp) and its asynchronous acquire
// (async_fair.cpp): runs fair_engine's steps (the scripts of fair_scripts.hpp over one pool,
// the waits on the waiter's own channel) and keeps the holding in hold_state (commit,
// watchdog, lease timer, loss), as lock_core does for distributed_lock.

#include <redcoord/lock/fair_lock.hpp>

#include "fair_engine.hpp"
#include "fair_scripts.hpp"
#include "hold_common.hpp"
#include "options_check.hpp"
#include "scripts.hpp"

#include <redcoord/core/detail/pubsub_mux.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/holder_label.hpp>
#include <redcoord/core/replication.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/core/token.hpp>

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <stop_token>
#include <string_view>
#include <thread>
#include <vector>

namespace redcoord::detail {

using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

// Leaves the gate when the holding's release is over, whatever happens.
struct leave_on_exit {
    local_gate& g;
    ~leave_on_exit() { g.leave(); }
};

class fair_core : public hold_state {
public:
    fair_core(connection_pool& pool, std::string resource, fair_lock_options o)
        : hold_state(std::move(resource), "fair lock", (validate(o), o.prefix),
                     {o.timing.ttl, o.timing.drift_factor, o.watchdog, o.max_extensions}),
          o_(std::move(o)), label_(resolve_holder_label(o_.label)), pool_(pool),
          id_(random_token()), queue_key_(fair_queue_key), wake_channel_(key + ":wake:" + id_),
          ttl_ms_(std::to_string(o_.timing.ttl.count())),
          lease_ms_(std::to_string(o_.waiter_lease.count())) {
        rt = pool_.runtime();
        observe_as("fair_lock");
        // The watchdog's extension must never queue behind this object's own request.
        if (o_.watchdog && pool_.options().max_size < 2)
            throw invalid_argument("fair_lock_options::watchdog needs a pool of max_size >= 2");
    }

    ~fair_core() override {
        stop_lease_work();  // no lease tick or loss callback runs past this
        try {
            (void)release();
        } catch (...) {
            // Never throw from a destructor; a key left behind expires after its TTL.
        }
        listener_.reset();  // no handler runs once this returns: they reach this object
    }

    const fair_lock_options& options() const noexcept { return o_; }
    const std::string& id() const noexcept { return id_; }
    const endpoint& where() const noexcept { return pool_.where(); }

    std::optional<lock_acquisition> acquire_until(clock_type::time_point deadline, bool unlimited,
                                                  std::stop_token stop = {}) {
        return timed_acquire([&] { return acquire_once(deadline, unlimited, std::move(stop)); });
    }

    std::optional<lock_acquisition> acquire_once(clock_type::time_point deadline, bool unlimited,
                                                 std::stop_token stop) {
        if (!gate.enter(deadline)) return std::nullopt;
        attempt_deadline = deadline;
        attempt_timed = !unlimited && deadline > clock_type::now();
        try {
            auto got = wait_in_turn(deadline, unlimited, stop);
            if (got)
                commit_hold(*got);
            else
                gate.leave();
            return got;
        } catch (...) {
            gate.leave();
            throw;
        }
    }

    bool extend(milliseconds ttl) {
        if (ttl.count() <= 0) throw invalid_argument("extend: ttl must be > 0");
        return extend_hold(std::nullopt, ttl) == extend_result::extended;
    }

    bool release() {
        auto a = take_hold();
        if (!a) return false;
        leave_on_exit leave{gate};
        auto conn =
            pool_.borrow_for(key);  // not sent yet: connection_error / pool_exhausted as they are
        try {
            return fair_release_script().run(*conn, {key, queue_key_}, {a->token}).integer() == 1;
        } catch (const reply_error&) {
            throw;
        } catch (const error& e) {
            throw outcome_unknown(std::string("fair lock: release reply lost, outcome unknown: ") +
                                  e.what());
        }
    }

    void unlock() noexcept {
        auto a = take_hold();
        if (!a) return;
        try {
            auto conn = pool_.borrow_for(key);
            const std::string_view keys[] = {key, queue_key_};
            const std::string_view args[] = {a->token};
            fair_release_script().send(*conn, keys, args);
        } catch (...) {
            // Not sent: the key expires after its TTL (and the queue's head waits that long).
        }
        gate.leave();
    }

    boost::signals2::scoped_connection on_lost(const std::function<void(const std::string&)>& h) {
        return connect_lost(h);
    }

private:
    friend class async_fair_op;

    fair_settings settings() const {
        return {o_.timing.ttl, o_.timing.drift_factor, o_.waiter_lease, o_.replication.replicas,
                o_.replication.timeout};
    }

    // The engine's loop for one call; the acquisition, or nullopt when the wait passed.
    std::optional<lock_acquisition> wait_in_turn(clock_type::time_point deadline, bool unlimited,
                                                 const std::stop_token& stop) {
        // One per call: a retry after a lost reply finds it.
        const std::string token = labelled_token(label_);
        // The engine weighs the wait's deadline against the validity it computes: both on the
        // runtime's clock (hold_state::lease_now()).
        const auto& clock = lease_clock();
        fair_engine eng(settings(), clock.now(), clock.from_steady(deadline), unlimited,
                        static_cast<bool>(listener_));
        // A stop request wakes the wait and ends the call as its deadline would.
        std::stop_callback on_stop(stop, [this] { notify(); });
        if (stop.stop_requested()) eng.cancel(clock.now());
        auto step = eng.start(clock.now());
        std::uint64_t seen = generation();
        for (;;) {
            switch (step.what) {
                case fair_do::attempt: {
                    seen = generation();  // before the attempt: a hand-off after it is never missed
                    const auto sent = clock.now();
                    reply r;
                    std::size_t acks = 0;
                    try {
                        r = attempt(token, step.mode, acks);
                    } catch (const auth_error&) {
                        leave_quietly(eng, token);
                        throw;
                    } catch (const reply_error&) {
                        leave_quietly(eng, token);
                        throw;
                    } catch (const protocol_error&) {
                        leave_quietly(eng, token);
                        throw;
                    } catch (const error&) {
                        if (unlimited) {
                            step = eng.on_error(clock.now());
                            break;
                        }
                        // The reply is lost, not the attempt: it may have taken the lock,
                        // so leave whatever the mode was.
                        leave_quietly(eng, token, true);
                        if (cut_by_deadline()) return std::nullopt;
                        throw;
                    }
                    const auto now = clock.now();
                    if (r.is_integer()) {
                        step = eng.on_granted(static_cast<std::uint64_t>(r.integer()), acks, sent,
                                              now);
                    } else {
                        step = eng.on_refused(parse_refusal(r), sent, now);
                    }
                    break;
                }
                case fair_do::subscribe: {
                    const bool confirmed = subscribe(deadline, eng.refresh_period());
                    step = eng.on_subscribed(confirmed, clock.now());
                    break;
                }
                case fair_do::wait: {
                    const bool notified = !stop.stop_requested() &&
                                          wait(seen, clock.to_steady(step.until), step.listen);
                    if (stop.stop_requested()) eng.cancel(clock.now());
                    step = eng.on_wake(notified, clock.now());
                    break;
                }
                case fair_do::give_back: {
                    try {
                        auto conn = pool_.borrow_for(key);
                        if (step.requeue)
                            (void)fair_release_script().run(*conn, {key, queue_key_},
                                                            {token, id_, lease_ms_});
                        else
                            (void)fair_release_script().run(*conn, {key, queue_key_}, {token});
                    } catch (...) {
                        // Not given back: the key expires after its TTL.
                    }
                    step = eng.on_given_back(clock.now());
                    break;
                }
                case fair_do::leave: leave_quietly(eng, token); return std::nullopt;
                case fair_do::acquired:
                    return lock_acquisition{token, eng.valid_until(), eng.fence()};
                case fair_do::timed_out: return std::nullopt;
            }
        }
    }

    // One attempt; `acks` gets the replicas' acknowledgements (replicas > 0).
    reply attempt(const std::string& token, fair_mode mode, std::size_t& acks) {
        const auto budget = io_budget();
        auto conn = budget
                        ? pool_.borrow_for(key, std::min(*budget, pool_.options().borrow_timeout))
                        : pool_.borrow_for(key);
        const std::string_view keys[] = {key, fence_key, queue_key_};
        const std::string_view args[] = {id_, token, ttl_ms_, lease_ms_,
                                         mode == fair_mode::queue ? "q" : "l"};
        if (o_.replication.replicas > 0) {
            auto rr = run_then_wait(*conn, fair_acquire_script(), keys, args,
                                    o_.replication.replicas, o_.replication.timeout);
            acks = rr.acks;
            return std::move(rr.result);
        }
        return budget ? fair_acquire_script().run_for(*conn, *budget, keys, args)
                      : fair_acquire_script().run(*conn, keys, args);
    }

    static fair_refusal parse_refusal(const reply& r) {
        const auto& e = r.elements();
        if (e.size() < 4) throw protocol_error("fair lock: unexpected reply to the acquire script");
        return {e[1].integer(), e[2].integer(), e[3].integer()};
    }

    // Out of the queue (and the lock given back if a lost reply had granted it), best effort: a
    // waiter that cannot be reached is skipped once its lease runs out. After a lost reply
    // (`reply_lost`) it runs whatever the mode, and leaves a tombstone for the token, so an
    // attempt that reaches the server after the leave takes nothing.
    void leave_quietly(const fair_engine& eng, const std::string& token,
                       bool reply_lost = false) noexcept {
        if (!reply_lost && !eng.maybe_queued()) return;
        try {
            auto conn = pool_.borrow_for(key, milliseconds(0));
            const auto budget = io_budget();
            const std::string_view keys[] = {key, queue_key_};
            std::vector<std::string_view> args{id_, token};
            if (reply_lost) args.emplace_back(ttl_ms_);
            if (budget)
                (void)fair_leave_script().run_for(*conn, std::max(*budget, milliseconds(20)), keys,
                                                  args);
            else
                (void)fair_leave_script().run(*conn, keys, args);
        } catch (...) {}
    }

    // How long one request of a timed acquire may take: what is left of its wait (at least
    // 10 ms, so the attempt made at the deadline has a chance), capped by command_timeout.
    std::optional<milliseconds> io_budget() const {
        if (!attempt_timed) return std::nullopt;
        const auto left =
            std::max(std::chrono::ceil<milliseconds>(attempt_deadline - clock_type::now()),
                     milliseconds(10));
        const auto cap = pool_.where().command_timeout;
        return std::min(left, cap.count() > 0 ? cap : left);
    }

    bool cut_by_deadline() const { return attempt_timed && clock_type::now() >= attempt_deadline; }

    // Starts listening on this waiter's channel (kept until the object goes) and waits briefly
    // for the server's confirmation; true when confirmed.
    bool subscribe(clock_type::time_point deadline, milliseconds refresh) {
        listen();
        const auto left = std::chrono::floor<milliseconds>(deadline - clock_type::now());
        return listener_.wait_confirmed(
            std::clamp(left, milliseconds(0), std::min(refresh, milliseconds(500))));
    }

    // Starts listening on this waiter's channel, kept until the object goes.
    void listen() {
        if (!listener_) {
            auto mux = rt->pubsub(pool_.where());
            // Every (re)subscription wakes the waiter to re-check: a hand-off may have been
            // published while the link was down.
            listener_ = mux->listen(wake_channel_, {[this](const pubsub_message&) { notify(); },
                                                    [this](bool up) {
                                                        if (up) notify();
                                                    }});
        }
    }

    void notify() {
        std::function<void()> async_wake;
        {
            std::lock_guard l(wake_mu_);
            ++generation_;
            async_wake = async_wake_;
        }
        wake_cv_.notify_all();
        if (async_wake) async_wake();
    }

    std::uint64_t generation() {
        std::lock_guard l(wake_mu_);
        return generation_;
    }

    // Waits until `until`, or until a notification newer than `seen` when `listen`.
    bool wait(std::uint64_t seen, clock_type::time_point until, bool listen) {
        std::unique_lock l(wake_mu_);
        if (!listen) {
            wake_cv_.wait_until(l, until, [] { return false; });
            return false;
        }
        return wake_cv_.wait_until(l, until, [&] { return generation_ != seen; });
    }

    extend_result extend_round(const std::string& token, milliseconds ttl,
                               clock_type::time_point) override {
        auto conn = pool_.borrow_for(key);
        const std::string ttl_ms = std::to_string(ttl.count());
        const std::string_view keys[] = {key};
        const std::string_view args[] = {token, ttl_ms};
        try {
            if (o_.replication.replicas > 0) {
                auto rr = run_then_wait(*conn, extend_script(), keys, args, o_.replication.replicas,
                                        o_.replication.timeout);
                if (rr.result.integer() != 1) return extend_result::lost;
                return rr.acks >= o_.replication.replicas ? extend_result::extended
                                                          : extend_result::not_confirmed;
            }
            return extend_script().run(*conn, keys, args).integer() == 1 ? extend_result::extended
                                                                         : extend_result::lost;
        } catch (const reply_error&) {
            throw;
        } catch (const error& e) {
            throw outcome_unknown(
                std::string("fair lock: extension reply lost, outcome unknown: ") + e.what());
        }
    }

    fair_lock_options o_;
    const std::string label_;  // resolved: carried in each call's token
    connection_pool& pool_;
    const std::string id_;
    const std::string queue_key_;
    const std::string wake_channel_;
    const std::string ttl_ms_;
    const std::string lease_ms_;

    std::mutex wake_mu_;
    std::condition_variable wake_cv_;
    std::uint64_t generation_ = 0;
    // The asynchronous acquire's wake-up (async_fair.cpp), called after each notification
    // outside wake_mu_; it only posts.
    std::function<void()> async_wake_;
    // Only the gate holder creates it; the destructor resets it first.
    pubsub_mux::listener listener_;
};

}  // namespace redcoord::detail
