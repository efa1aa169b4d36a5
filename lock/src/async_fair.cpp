// The asynchronous acquire of a fair_lock (async.hpp): fair_engine's steps, as the blocking
// driver (fair_core::wait_in_turn) runs them, but each a callback on the event loop: the
// scripts over the runtime's pipelined link, the waits on a steady_timer ended early by the
// waiter's channel (fair_core::notify), the subscription never waited for.

#include <redcoord/lock/async.hpp>

#include "fair_core.hpp"
#include "lock_access.hpp"

#include <redcoord/core/detail/async_script.hpp>
#include <redcoord/core/detail/async_wait_op.hpp>
#include <redcoord/core/detail/refusal.hpp>

namespace redcoord::detail {

class async_fair_op final : public async_wait_op<lock_acquisition> {
public:
    async_fair_op(fair_core& c, clock_type::time_point deadline, acquire_completion done)
        : async_wait_op(c.rt->io(), std::move(done), "async_acquire"), c_(c),
          link_(c.rt->link(c.where())), deadline_(deadline), timed_(deadline > clock_type::now()),
          token_(labelled_token(c.label_)),
          // The engine weighs the deadline against its validity: both on the runtime's clock.
          eng_(c.settings(), c.lease_now(), c.lease_clock().from_steady(deadline), false,
               static_cast<bool>(c.listener_)) {}

private:
    [[nodiscard]] clock_type::time_point lease_now() const { return c_.lease_now(); }

    void begin() override {
        {
            std::lock_guard l(c_.wake_mu_);
            c_.async_wake_ = waker();
        }
        step(eng_.start(lease_now()));
    }

    // From now on the call ends as at its deadline: its last attempt takes it out of the
    // queue (a grant it still gets is given back).
    void on_cancel() override {
        eng_.cancel(lease_now());
        end_wait();
    }

    void step(fair_step s) {
        if (completed()) return;
        switch (s.what) {
            case fair_do::attempt: return attempt(s.mode);
            case fair_do::subscribe: {
                bool confirmed = false;
                try {
                    c_.listen();
                    confirmed = c_.listener_.wait_confirmed(milliseconds(0));  // never waits
                } catch (...) {
                    return leave_then_finish(std::current_exception());
                }
                return step(eng_.on_subscribed(confirmed, lease_now()));
            }
            case fair_do::wait:
                if (s.listen && c_.generation() != seen_)
                    return step(eng_.on_wake(true, lease_now()));
                return wait_until(
                    c_.lease_clock().to_steady(s.until),
                    [this](bool woke) { step(eng_.on_wake(woke, lease_now())); }, s.listen);
            case fair_do::give_back: {
                script_call call{&fair_release_script(), {c_.key, c_.queue_key_}, {token_}};
                if (s.requeue) {
                    call.args.push_back(c_.id_);
                    call.args.push_back(c_.lease_ms_);
                }
                // Whatever comes of it: a key not given back expires after its TTL.
                return send(std::move(call),
                            [this](const link_outcome&) { step(eng_.on_given_back(lease_now())); });
            }
            case fair_do::leave: return leave_then_finish(cancelled() ? aborted() : nullptr);
            case fair_do::acquired:
                if (cancelled()) {
                    // Won by the last attempt after the cancellation: given back first.
                    return send({&fair_release_script(), {c_.key, c_.queue_key_}, {token_}},
                                [this](const link_outcome&) { finish(aborted(), std::nullopt); });
                }
                return finish(nullptr, lock_acquisition{token_, eng_.valid_until(), eng_.fence()});
            case fair_do::timed_out: return finish(cancelled() ? aborted() : nullptr, std::nullopt);
        }
    }

    void attempt(fair_mode mode) {
        seen_ = c_.generation();  // before the attempt: a hand-off after it is never missed
        clear_notice();
        const auto sent = lease_now();
        send({&fair_acquire_script(),
              {c_.key, std::string(c_.fence_key), c_.queue_key_},
              {c_.id_, token_, c_.ttl_ms_, c_.lease_ms_, mode == fair_mode::queue ? "q" : "l"}},
             [this, sent](link_outcome o) { attempted(std::move(o), sent); });
    }

    void attempted(link_outcome o, clock_type::time_point sent) {
        const auto now = lease_now();
        if (o.result.answered()) {
            const auto& r = *o.result.value;
            if (r.is_error())
                return leave_then_finish(
                    reply_exception(r.text(), "EVALSHA", "fair lock '" + c_.resource + "'"));
            if (r.is_integer())
                return step(eng_.on_granted(static_cast<std::uint64_t>(r.integer()), 0, sent, now));
            try {
                return step(eng_.on_refused(fair_core::parse_refusal(r), sent, now));
            } catch (...) {
                return leave_then_finish(std::current_exception());
            }
        }
        // The reply is lost, not the attempt: it may have taken the lock, so leave whatever
        // the mode was (a tombstone for the token: a late attempt takes nothing).
        auto failure = o.failure ? o.failure
                                 : std::make_exception_ptr(connection_error(
                                       "fair lock '" + c_.resource + "': " + o.result.error));
        const bool cut = timed_ && clock_type::now() >= deadline_;
        leave_then_finish(cut ? (cancelled() ? aborted() : nullptr) : failure, true);
    }

    // Out of the queue (awaited, so the handler sees no entry), then completes with `failure`
    // (null: the wait ran out without the lock).
    void leave_then_finish(const std::exception_ptr& failure, bool reply_lost = false) {
        if (!reply_lost && !eng_.maybe_queued()) return finish(failure, std::nullopt);
        script_call call{&fair_leave_script(), {c_.key, c_.queue_key_}, {c_.id_, token_}};
        if (reply_lost) call.args.push_back(c_.ttl_ms_);
        send(std::move(call), [this, failure](const link_outcome&) {
            finish(failure, std::nullopt);  // not reached: its lease runs out
        });
    }

    // A request's deadline, as the blocking driver's io_budget: what is left of a timed wait
    // (at least 10 ms), capped by the endpoint's command_timeout; an untimed call has the
    // command_timeout (its one attempt may need a connect first).
    [[nodiscard]] clock_type::time_point request_deadline() const {
        const auto now = clock_type::now();
        const auto cap = c_.where().command_timeout;
        const auto capped = cap.count() > 0 ? now + cap : clock_type::time_point::max();
        if (!timed_) return capped;
        return std::min(std::max(deadline_, now + milliseconds(10)), capped);
    }

    void send(script_call call, std::function<void(link_outcome)> then) {
        exec(link_, std::move(call), request_deadline(), std::move(then));
    }

    void finish(std::exception_ptr failure, std::optional<lock_acquisition> got) {
        if (completed()) return;
        {
            // Before the gate opens: the next acquire of this lock installs its own.
            std::lock_guard l(c_.wake_mu_);
            c_.async_wake_ = nullptr;
        }
        if (got) {
            try {
                c_.commit_hold(*got);
            } catch (...) {
                exec_script(link_, {&fair_release_script(), {c_.key, c_.queue_key_}, {token_}},
                            request_deadline(), [](const link_outcome&) {});
                got.reset();
                failure = std::current_exception();
            }
        }
        if (!got) c_.gate.leave();
        complete(std::move(failure), std::move(got));
    }

    fair_core& c_;
    std::shared_ptr<async_link> link_;
    clock_type::time_point deadline_;
    bool timed_;         // the wait was still ahead when the call started
    std::string token_;  // one per call: a leave after a lost reply names it
    fair_engine eng_;
    std::uint64_t seen_ = 0;
};

std::shared_ptr<async_operation> start_async_acquire(fair_lock& lock, milliseconds wait,
                                                     acquire_completion done) {
    auto& c = lock_access::core(lock);
    if (wait.count() < 0) throw invalid_argument("async_acquire: wait must be >= 0");
    if (c.options().replication.replicas > 0)
        throw invalid_argument("fair lock: async_acquire does not wait for replicas");
    const auto& ep = c.where();
    require_event_loop_endpoint(ep, "fair lock: async_acquire");
    if (!c.gate.try_enter())
        throw invalid_argument("fair lock '" + c.resource +
                               "': an acquire is under way or the lock is held (lock objects "
                               "are not recursive)");
    try {
        const auto deadline = deadline_after(wait);
        c.attempt_deadline = deadline;
        c.attempt_timed = deadline > clock_type::now();
        auto op = std::make_shared<async_fair_op>(c, deadline, std::move(done));
        op->start();
        return op;
    } catch (...) {
        c.gate.leave();
        throw;
    }
}

runtime& runtime_of(fair_lock& lock) { return *lock_access::core(lock).rt; }

}  // namespace redcoord::detail
