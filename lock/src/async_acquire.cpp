// The asynchronous acquire of a distributed_lock (async.hpp): wait_policy's decisions and
// lock_engine's rounds, as the blocking acquire_loop drives them, but each step a callback
// on the event loop (the runtime's pipelined link for the attempts, a steady_timer and the
// release waiter's watch for the waits) instead of a blocked thread.

#include <redcoord/lock/async.hpp>

#include "async_lock_io.hpp"
#include "lock_core.hpp"

#include <redcoord/core/detail/async_link.hpp>
#include <redcoord/core/detail/refusal.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/holder_label.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/core/token.hpp>
#include <redcoord/lock/errors.hpp>

#include <mutex>

namespace redcoord::detail {

using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;
using type = wait_action::type;

class async_acquire_op final : public async_lock_io<lock_acquisition> {
public:
    async_acquire_op(lock_core& core, clock_type::time_point deadline, acquire_completion done)
        : async_lock_io(core, std::move(done), "async_acquire"), deadline_(deadline),
          policy_(core.c_.waiting, deadline,
                  [](std::uint64_t lo, std::uint64_t hi) { return random_between(lo, hi); }),
          timed_(deadline > clock_type::now()) {}

private:
    // An attempt in flight ends when its reply comes (what it got is given back).
    void on_cancel() override {
        if (!attempting_) finish(aborted(), std::nullopt);
    }

    void on_complete() override {
        if (watching_) core_.waiter().unwatch(watch_id_);
    }

    void begin() override {
        core_.deferral_on_acquire();
        // A release held back by unlock() goes out first; the blocking path renews it in
        // place instead, an optimisation this path does without.
        std::optional<lock_core::held_back> previous = core_.take_held_back();
        if (core_.deferred_) {
            detail::lock_guard l(core_.deferred_->mu);
            core_.deferred_->flushed.reset();
        }
        if (previous)
            send_and_forget(
                core_.engine_.release(previous->held, previous->floor, core_.lease_now()));
        step(policy_.start(clock_type::now()));
    }

    void step(wait_action next) {
        if (cancelled()) return finish(aborted(), std::nullopt);
        switch (next.what_to_do) {
            case type::done:
                if (!next.acquired && !core_.unreachable_.empty())
                    return finish(std::make_exception_ptr(
                                      quorum_unreachable(std::exchange(core_.unreachable_, {}))),
                                  std::nullopt);
                return finish(nullptr, next.acquired ? std::move(got_) : std::nullopt);
            case type::attempt: return attempt(next.what);
            case type::subscribe: {
                auto& w = core_.waiter();
                if (!watching_) {
                    watch_id_ = w.watch(waker());
                    watching_ = true;
                }
                bool live = false;
                seen_ = w.arm(milliseconds(0), live);  // listens; never waits for the link
                return step(policy_.on_subscribed(clock_type::now()));
            }
            case type::wait:
                if (core_.waiter().generation() != seen_) {
                    seen_ = core_.waiter().generation();
                    return step(policy_.on_waited(true, clock_type::now()));
                }
                return arm_wait(next.until, true, [this](bool woke) {
                    seen_ = core_.waiter().generation();
                    step(policy_.on_waited(woke, clock_type::now()));
                });
            case type::pause:
                return arm_wait(next.until, false, [this, forget = next.forget_releases](bool) {
                    if (forget && watching_) seen_ = core_.waiter().generation();
                    step(policy_.on_paused(clock_type::now()));
                });
        }
    }

    // Waits for `until` (a release notice ends a `wakeable` wait early) and continues with
    // `then(woke)` on the strand, or ends a cancelled operation.
    void arm_wait(clock_type::time_point until, bool wakeable, std::function<void(bool)> then) {
        if (wakeable) clear_notice();  // the generation check above covers what came before
        wait_until(
            until,
            [this, then = std::move(then)](bool woke) {
                if (cancelled()) return finish(aborted(), std::nullopt);
                then(woke);
            },
            wakeable);
    }

    void attempt(ask what) {
        core_.unreachable_.clear();
        const attempt_context ctx{nullptr, false, core_.registered_};
        round_ = std::make_shared<lock_round>(
            core_.engine_.acquire(labelled_token(core_.c_.label), what, core_.lease_now(), ctx));
        attempting_ = true;
        what_ = what;
        outstanding_ = links_.size();
        first_failure_.reset();
        for (std::size_t i = 0; i < links_.size(); ++i)
            send(round_, i, request_deadline(),
                 [this, i](link_outcome o) { answered(i, std::move(o)); });
    }

    // One node's outcome of the attempt; the verdict once every node has one (each request
    // ends by its deadline, so a hung node costs at most the round's timeout).
    void answered(std::size_t node, link_outcome o) {
        const auto now = core_.lease_now();
        std::exception_ptr failure = o.failure;
        if (o.result.answered()) {
            if (o.result.value->is_error())
                failure = reply_exception(o.result.value->text(), "EVALSHA",
                                          "lock '" + core_.resource + "'");
            round_->on_result(node, o.result, now);
        } else if (o.sent) {
            round_->on_result(node, o.result, now);
        } else {
            round_->on_not_sent(node, node_outcome::status::unreachable, o.result.error);
        }
        if (failure && !first_failure_) {
            first_failure_ = std::make_unique<link_outcome>(std::move(o));
            first_failure_->failure = failure;
        }
        if (--outstanding_ == 0) attempted();
    }

    // A request's deadline, as the blocking lock bounds it: Redlock's node_timeout per round;
    // the single instance's what is left of the wait (at least 10 ms, so the attempt a wait
    // makes at its deadline has a chance), capped by the endpoint's command_timeout.
    [[nodiscard]] clock_type::time_point request_deadline() const {
        const auto now = clock_type::now();
        if (links_.size() > 1) return now + core_.c_.round_timeout;
        // A call without a wait (try_lock's form) has the endpoint's timeout, as the blocking
        // one does: its one attempt may need a connect first.
        if (!timed_)
            return command_timeout_.count() > 0 ? now + command_timeout_
                                                : clock_type::time_point::max();
        auto until = std::max(deadline_, now + milliseconds(10));
        if (command_timeout_.count() > 0) until = std::min(until, now + command_timeout_);
        return until;
    }

    void attempted() {
        attempting_ = false;
        const auto now = clock_type::now();
        if (core_.c_.keep_outcomes) {
            detail::lock_guard l(core_.mu);
            core_.last_ = round_->outcomes();
        }
        auto v = core_.engine_.decide_acquire(*round_, core_.lease_now());
        // The round is done with once decided and given back: a waiter keeps none while it
        // waits (10,000 waiters kept 5 MB of spent rounds and their tokens). It goes before the
        // next step too, which arms the wait: that memory is then free for the wait to take,
        // instead of a hole the allocator cannot give back (a burst of 10,000 waiters).
        std::shared_ptr<lock_round> round = std::move(round_);
        if (v.got)
            core_.registered_ = false;
        else if (what_ != ask::nothing)
            core_.registered_ = true;
        if (!v.give_back.empty())
            send_and_forget(core_.engine_.give_back(*round, core_.lease_now()), v.give_back);
        if (links_.size() == 1) {
            // The single instance reports its node's failure to the caller, as its blocking
            // transport does; Redlock's node failures are votes.
            auto failure = first_failure_ ? first_failure_->failure : nullptr;
            if (!failure && round->outcomes()[0].state == node_outcome::status::error)
                failure = std::make_exception_ptr(
                    protocol_error("lock: unexpected reply: " + round->outcomes()[0].detail));
            if (failure) {
                // A request cut by the wait's own deadline ends the wait without the lock.
                const bool cut = first_failure_ &&
                                 first_failure_->result.state == node_result::status::timeout &&
                                 now >= deadline_;
                return finish(cut ? nullptr : failure, std::nullopt);
            }
        }
        round.reset();
        first_failure_.reset();
        if (v.got) {
            if (cancelled()) {
                send_and_forget(core_.engine_.release(*v.got, v.floor_needed, core_.lease_now()));
                return finish(aborted(), std::nullopt);
            }
            {
                detail::lock_guard l(core_.mu);
                core_.floor_needed_ = v.floor_needed;
            }
            got_ = std::move(v.got);
            floor_ = v.floor_needed;
            return step(policy_.on_attempt(true, {}, now, false));
        }
        if (!v.unreachable.empty()) {
            // With no wait, say so at once; with one, retry while it lasts and report it only
            // if the wait ends this way.
            if (core_.obs) core_.obs->quorum_failures.inc();
            if (what_ == ask::nothing)
                return finish(std::make_exception_ptr(quorum_unreachable(v.unreachable)),
                              std::nullopt);
            core_.note_wait(v.unreachable);
            core_.unreachable_ = std::move(v.unreachable);
        }
        const bool live = watching_ && core_.waiter().live();
        step(policy_.on_attempt(false, v.why, now, live));
    }

    void finish(std::exception_ptr failure, std::optional<lock_acquisition> got) {
        if (completed()) return;
        if (got) {
            try {
                core_.commit_hold(*got);
            } catch (...) {
                send_and_forget(core_.engine_.release(*got, floor_, core_.lease_now()));
                got.reset();
                failure = std::current_exception();
            }
        }
        if (!got) core_.gate.leave();
        complete(std::move(failure), std::move(got));
    }

    clock_type::time_point deadline_;
    wait_policy policy_;
    bool timed_;                         // the wait was still ahead when the call started
    std::shared_ptr<lock_round> round_;  // shared with its commands in flight (their EVALs)
    std::size_t outstanding_ = 0;        // nodes of the attempt still to answer
    // The attempt's first failed node (the single instance's); most attempts have none, and a
    // waiting operation keeps nothing of it.
    std::unique_ptr<link_outcome> first_failure_;
    ask what_ = ask::nothing;
    std::optional<lock_acquisition> got_;
    bool floor_ = false;
    std::uint64_t seen_ = 0;
    std::uint64_t watch_id_ = 0;
    bool watching_ = false, attempting_ = false;
};

void lock_core::require_async_endpoints(std::string_view what) const {
    for (auto* p : transport_->pools())
        require_event_loop_endpoint(p->where(), std::string(c_.kind) + ": " + std::string(what));
}

std::shared_ptr<async_operation> lock_core::async_acquire_until(lock_clock::time_point deadline,
                                                                acquire_completion done) {
    if (c_.replicas > 0)
        throw invalid_argument(std::string(c_.kind) + ": async_acquire does not wait for replicas");
    require_async_endpoints("async_acquire");
    if (!gate.try_enter())
        throw invalid_argument(std::string(c_.kind) + " '" + resource +
                               "': an acquire is under way or the lock is held (lock objects "
                               "are not recursive)");
    try {
        attempt_deadline = deadline;
        attempt_timed = deadline > clock_type::now();
        auto op = std::make_shared<async_acquire_op>(*this, deadline, std::move(done));
        op->start();
        return op;
    } catch (...) {
        gate.leave();
        throw;
    }
}

}  // namespace redcoord::detail
