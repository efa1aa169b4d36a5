// The asynchronous pop of a reliable_queue (async.hpp): the consumer lease's plans, as the
// blocking pop_as follows them, but each attempt a non-blocking command on the runtime's
// pipelined link (a blocking BLMOVE there would stall every other operation of the link) and
// each wait on an empty queue a wait for push()'s notice on the queue's channel (one listener
// per queue object on the runtime's shared pub/sub link), not a poll.

#include <redcoord/queue/async.hpp>

#include "reliable_queue_impl.hpp"
#include "reliable_scripts.hpp"

#include <redcoord/core/deadline.hpp>
#include <redcoord/core/detail/async_link.hpp>
#include <redcoord/core/detail/async_wait_op.hpp>
#include <redcoord/core/detail/refusal.hpp>
#include <redcoord/core/detail/release_waiter.hpp>
#include <redcoord/core/errors.hpp>

#include <boost/asio/post.hpp>

namespace redcoord::detail {

struct queue_access {
    using impl_type = reliable_queue::impl;
    static impl_type& impl(reliable_queue& q) { return *q.impl_; }
};

namespace {

namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The re-check while the push channel's subscription is not confirmed (a notice could be
// missed then): fast at first, then at most ten attempts a second per pending pop.
constexpr milliseconds first_poll{1}, max_poll{100};

class async_pop_op final : public async_wait_op<delivery> {
public:
    async_pop_op(queue_access::impl_type& m, milliseconds timeout, async_completion<delivery> done)
        : async_wait_op(m.rt->io(), std::move(done), "async_pop"), m_(m),
          link_(m.rt->link(m.pool.where())), pushes_(m.push_notices()), rechecks_(m.pop_rechecks()),
          command_timeout_(m.pool.where().command_timeout),
          ticket_(m.locked([&](consumer_lease& l) { return l.begin_pop(m.now(), timeout); })),
          pkey_(m.processing_key(ticket_.id)), hkey_(m.heartbeat_key(ticket_.id)) {}

private:
    void begin() override {
        watch_id_ = pushes_.watch(waker());
        watching_ = true;
        attempt();
    }

    // A cancellation ends a wait at once (the base's on_cancel); an attempt in flight ends
    // when its reply comes (what it moved is given back).

    void on_complete() override {
        if (watching_) pushes_.unwatch(watch_id_);
        stop_rechecking();
        m_.locked([&](consumer_lease& l) { l.end_pop(ticket_, how_); });
    }

    void end(std::exception_ptr failure, std::optional<delivery> got, pop_end how) {
        how_ = how;
        complete(std::move(failure), std::move(got));
    }

    [[nodiscard]] clock_type::time_point request_deadline() const {
        return command_timeout_.count() > 0 ? deadline_after(command_timeout_)
                                            : clock_type::time_point::max();
    }

    void attempt() {
        // Listening before the attempt: a push after it is announced (a notice older than
        // it wakes nothing).
        bool live = false;
        (void)pushes_.arm(milliseconds(0), live);  // never waits for the link
        live_ = live;
        clear_notice();
        const auto plan = m_.locked([&](consumer_lease& l) {
            return l.plan_move(ticket_, m_.now(), cancelled(), command_timeout_);
        });
        if (plan.kind == move_kind::none)
            return end(cancelled() ? aborted() : nullptr, std::nullopt, pop_end::empty);
        const auto sent = m_.now();
        auto then = [this, kind = plan.kind, sent](link_outcome o) {
            answered(kind, sent, std::move(o));
        };
        // A plain LMOVE while the known lease outlives it, else the script that renews the
        // lease first.
        if (plan.kind == move_kind::plain)
            return exec(link_, {"LMOVE", m_.ready_key, pkey_, "RIGHT", "LEFT"}, request_deadline(),
                        std::move(then));
        exec(link_,
             script_call{&queue_pop_script(),
                         {m_.consumers_key, hkey_, m_.ready_key, pkey_},
                         {ticket_.id, m_.ttl_ms}},
             request_deadline(), std::move(then));
    }

    static std::exception_ptr failure_of(const link_outcome& o, std::string_view cmd) {
        if (o.result.answered())
            return reply_exception(o.result.value->text(), cmd, "reliable_queue");
        if (o.failure) return o.failure;
        return std::make_exception_ptr(
            connection_error("reliable_queue: " + std::string(cmd) + ": " + o.result.error));
    }

    void answered(move_kind kind, clock_type::time_point sent, link_outcome o) {
        if (!o.result.answered() || o.result.value->is_error()) {
            // An error reply or an unsent command changed nothing; a lost reply may hide a move.
            const bool refused = o.result.answered() || !o.sent;
            return end(failure_of(o, kind == move_kind::plain ? "LMOVE" : "EVALSHA"), std::nullopt,
                       refused ? pop_end::refused : pop_end::transport_error);
        }
        const auto& r = *o.result.value;
        const bool moved = !r.is_nil();
        const bool renew_now = m_.locked(
            [&](consumer_lease& l) { return l.moved(ticket_, kind, sent, m_.now(), true, moved); });
        if (!moved) {
            if (cancelled()) return end(aborted(), std::nullopt, pop_end::empty);
            return wait();
        }
        std::string element = r.text();
        if (cancelled()) return give_back(element);
        if (!renew_now) return deliver(std::move(element));
        // Stalled past the lease bound: register again before handing it out, as pop() does.
        const auto again = m_.now();
        exec(link_,
             script_call{
                 &queue_register_script(), {m_.consumers_key, hkey_}, {ticket_.id, m_.ttl_ms}},
             request_deadline(),
             [this, again, element = std::move(element)](link_outcome o) mutable {
                 if (o.result.answered() && o.result.value->is_array()) {
                     const auto& e = o.result.value->elements();
                     const bool intact = e.size() == 2 && e[0].is_integer() && e[1].is_integer() &&
                                         e[0].integer() == 0 && e[1].integer() == 1;
                     if (m_.locked([&](consumer_lease& l) {
                             return l.renewed(ticket_.who, again, intact);
                         }))
                         m_.lease_losses.fetch_add(1);
                 }
                 // Handed out whatever the registration got (dropping it would strand it); the
                 // upkeep keeps renewing.
                 deliver(std::move(element));
             });
    }

    // Cancelled while the move was in flight: the message goes back to the head, untouched.
    void give_back(const std::string& element) {
        exec(link_,
             script_call{
                 &queue_give_back_script(), {pkey_, m_.ready_key}, {element, m_.push_channel}},
             request_deadline(), [this](const link_outcome& o) {
                 // Not given back (the link failed): retire the identity so that recovery
                 // returns it once the lease runs out.
                 const bool back = o.result.answered() && !o.result.value->is_error();
                 end(aborted(), std::nullopt, back ? pop_end::empty : pop_end::transport_error);
             });
    }

    void deliver(std::string element) {
        end(nullptr, queue_access::impl_type::make_delivery(std::move(element), ticket_.id),
            pop_end::delivered);
    }

    // The queue was empty: wait for a push notice, or the shared slow re-check (a message no
    // notice announced), or the deadline; while the subscription is not confirmed, for this
    // pop's own fast re-check instead. Then try again (the attempt at the deadline is the last).
    void wait() {
        auto until = ticket_.deadline;
        if (live_) {
            recheck_id_ = rechecks_->join(waker(), link_);
            rechecking_ = true;
        } else {
            // A refused SUBSCRIBE (the ACL user may not use the channel) would leave this pop
            // polling for good: the permission is missing, and the error says which.
            if (auto text = pushes_.refusal(); text && is_permission_refusal(*text))
                return end(reply_exception(*text, "SUBSCRIBE",
                                           "reliable_queue: async_pop waits for push notices on " +
                                               m_.push_channel),
                           std::nullopt, pop_end::empty);
            until = std::min(until, m_.now() + backoff_);
            backoff_ = std::min(backoff_ * 2, max_poll);
        }
        wait_until(m_.rt->clock().to_steady(until), [this](bool) {
            stop_rechecking();
            if (cancelled()) return end(aborted(), std::nullopt, pop_end::empty);
            attempt();
        });
    }

    void stop_rechecking() noexcept {
        if (std::exchange(rechecking_, false)) rechecks_->leave(recheck_id_);
    }

    queue_access::impl_type& m_;
    std::shared_ptr<async_link> link_;
    release_waiter& pushes_;  // the queue object's; outlives its pops
    std::shared_ptr<pop_recheck> rechecks_;
    milliseconds command_timeout_;
    consumer_lease::pop_ticket ticket_;
    std::string pkey_, hkey_;
    milliseconds backoff_ = first_poll;
    std::uint64_t watch_id_ = 0, recheck_id_ = 0;
    pop_end how_ = pop_end::empty;
    bool watching_ = false, live_ = false, rechecking_ = false;
};

// The operation of a pop whose consumer could not start: nothing to cancel.
struct failed_start final : async_operation {
    void cancel() noexcept override {}
};

}  // namespace

runtime& runtime_of(reliable_queue& q) { return *queue_access::impl(q).rt; }

std::shared_ptr<async_operation> start_async_pop(reliable_queue& q, milliseconds timeout,
                                                 async_completion<delivery> done) {
    auto& m = queue_access::impl(q);
    if (timeout.count() < 0)
        throw invalid_argument("async_pop: the timeout must not be negative, not " +
                               std::to_string(timeout.count()) + " ms");
    if (m.opts.replication.replicas > 0)
        throw invalid_argument("reliable_queue: async_pop does not wait for replicas");
    const auto& ep = m.pool.where();
    require_event_loop_endpoint(ep, "reliable_queue: async_pop");
    try {
        m.start_consumer();
    } catch (const error&) {
        // Unreachable, refused password, ...: reported through the handler, as a failed
        // attempt is, never from the initiation.
        asio::post(m.rt->io(), [done = std::move(done), e = std::current_exception()] {
            done(e, std::nullopt);
        });
        return std::make_shared<failed_start>();
    }
    auto op = std::make_shared<async_pop_op>(m, timeout, std::move(done));
    op->start();
    return op;
}

}  // namespace redcoord::detail
