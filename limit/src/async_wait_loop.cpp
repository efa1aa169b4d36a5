#include "async_wait_loop.hpp"

#include <redcoord/core/detail/async_link.hpp>
#include <redcoord/core/detail/async_wait_op.hpp>
#include <redcoord/core/detail/refusal.hpp>
#include <redcoord/core/detail/release_waiter.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/core/token.hpp>

#include <algorithm>

namespace redcoord::detail {

using steady = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

class limit_wait_op final : public async_wait_op<bool> {
public:
    limit_wait_op(async_wait_spec spec, std::function<void(std::exception_ptr, bool)> done)
        : async_wait_op(
              spec.rt->io(),
              [done = std::move(done)](std::exception_ptr e, std::optional<bool> got) {
                  done(std::move(e), got.value_or(false));
              },
              "async_acquire"),
          s_(std::move(spec)), link_(s_.rt->link(s_.where)),
          command_timeout_(s_.where.command_timeout), id_(random_token()),
          timed_(s_.deadline > steady::now()) {}

private:
    void begin() override {
        watch_id_ = s_.waiter->watch(waker());
        watching_ = true;
        round();
    }

    void on_complete() override {
        if (watching_) s_.waiter->unwatch(watch_id_);
    }

    // One turn of wait_for_release's loop: an attempt (the last one once the deadline passed).
    void round() {
        if (cancelled()) return give_up(aborted());
        last_ = steady::now() >= s_.deadline;
        bool live = false;
        seen_ = s_.waiter->arm(milliseconds(0), live);  // listens; never waits for the link
        live_ = live;
        clear_notice();
        const auto sent_at = steady::now();
        send(s_.attempt(last_ && !queued_ ? std::string() : id_),
             [this, sent_at](const reply& r) { attempted(r, sent_at); });
    }

    void attempted(const reply& r, steady::time_point sent_at) {
        wait_attempt a;
        try {
            a = s_.settle(r, sent_at);
        } catch (...) {
            return give_up(std::current_exception());
        }
        if (a.got) {
            if (!cancelled()) return complete(nullptr, true);
            // Given back before completing: a cancelled acquire leaves no key.
            return send(s_.give_back(), [this](const reply&) { give_up(aborted()); });
        }
        if (!last_) queued_ = true;
        if (cancelled()) return give_up(aborted());
        if (last_) return give_up(nullptr);
        // A lease that ends publishes nothing: wake when the awaited one ends, or on a release.
        const auto sleep = refused_sleep(s_.policy, a.next_free, live_);
        if (s_.waiter->generation() != seen_) return round();
        wait_until(std::min(s_.deadline, steady::now() + sleep), [this](bool) { round(); });
    }

    // Ends without a grant: withdraws the queue entry first (awaited, so a caller that sees
    // the completion sees no entry), then completes with `failure` (null: the wait ran out).
    void give_up(const std::exception_ptr& failure) {
        if (completed()) return;
        if (!queued_) return complete(failure, std::nullopt);
        queued_ = false;
        send(
            s_.leave(id_), [this, failure](const reply&) { complete(failure, std::nullopt); },
            [this, failure](const std::exception_ptr&) {
                complete(failure, std::nullopt);  // the entry lapses after its grace
            });
    }

    // A request's deadline, as the locks bound it: what is left of the wait (at least 10 ms,
    // so the attempt at the deadline has a chance), capped by the endpoint's command_timeout.
    // A call without a wait (try_acquire's form) has the endpoint's timeout, as the blocking
    // one does: its one attempt may need a connect first.
    [[nodiscard]] steady::time_point request_deadline() const {
        const auto now = steady::now();
        if (!timed_)
            return command_timeout_.count() > 0 ? now + command_timeout_
                                                : steady::time_point::max();
        auto until = std::max(s_.deadline, now + milliseconds(10));
        if (command_timeout_.count() > 0) until = std::min(until, now + command_timeout_);
        return until;
    }

    // Runs `call` and continues on the strand with its reply, or with `failed` (default:
    // give_up) when it got none or an error reply.
    void send(script_call call, std::function<void(const reply&)> then,
              std::function<void(std::exception_ptr)> failed = {}) {
        const auto deadline = request_deadline();
        exec(link_, std::move(call), deadline,
             [this, then = std::move(then), failed = std::move(failed), deadline](link_outcome o) {
                 replied(then, failed, deadline, std::move(o));
             });
    }

    void replied(const std::function<void(const reply&)>& then,
                 const std::function<void(std::exception_ptr)>& failed, steady::time_point deadline,
                 link_outcome o) {
        std::exception_ptr failure = o.failure;
        if (o.result.answered()) {
            const auto& v = *o.result.value;
            if (!v.is_error()) return then(v);
            failure = reply_exception(v.text(), "EVALSHA", s_.what);
        } else if (o.result.state == node_result::status::timeout && timed_ &&
                   deadline >= s_.deadline && steady::now() >= s_.deadline && !failed) {
            // A request cut by the wait's own deadline ends the wait without a grant.
            failure = nullptr;
        } else if (!failure) {
            failure = std::make_exception_ptr(connection_error(s_.what + ": " + o.result.error));
        }
        if (failed) return failed(failure);
        if (o.sent && !o.result.answered()) queued_ = true;  // it may have queued us: leave
        give_up(failure);
    }

    async_wait_spec s_;
    std::shared_ptr<async_link> link_;
    milliseconds command_timeout_;
    std::string id_;  // this call's place among the waiters
    std::uint64_t seen_ = 0, watch_id_ = 0;
    bool timed_;  // the wait was still ahead when the call started
    bool live_ = false, last_ = false, queued_ = false, watching_ = false;
};

}  // namespace

std::shared_ptr<async_operation> start_async_wait(
    async_wait_spec spec, std::function<void(std::exception_ptr, bool)> done) {
    const auto& ep = spec.where;
    require_event_loop_endpoint(ep, spec.what);
    auto op = std::make_shared<limit_wait_op>(std::move(spec), std::move(done));
    op->start();
    return op;
}

}  // namespace redcoord::detail
