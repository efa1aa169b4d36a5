// The asynchronous arrival at a barrier (async.hpp): the blocking arrive_and_wait's protocol
// (subscribe first, arrive, wait for a wake or the refresh period, refresh, withdraw at the
// timeout), each step a callback on the event loop: the scripts on the runtime's pipelined
// link, the wake-up posted by the hub's subscription, the pauses on a steady_timer.

#include <redcoord/signaling/async.hpp>

#include "barrier_keys.hpp"
#include "hub_core.hpp"
#include "party.hpp"
#include "signaling_scripts.hpp"

#include <redcoord/core/deadline.hpp>
#include <redcoord/core/detail/async_link.hpp>
#include <redcoord/core/detail/async_script.hpp>
#include <redcoord/core/detail/async_wait_op.hpp>
#include <redcoord/core/detail/refusal.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/token.hpp>

namespace redcoord::detail {

using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct barrier_access {
    static std::shared_ptr<async_operation> start(barrier& b, milliseconds timeout,
                                                  async_completion<std::uint64_t> done);
    static signal_hub& hub(barrier& b) noexcept { return b.hub_; }
    static const barrier_options& options(const barrier& b) noexcept { return b.opts_; }
};

namespace {

// How often the operation looks whether the hub's link confirmed the channel (the blocking
// form sleeps on the listener; this one has no thread to sleep).
constexpr milliseconds confirm_poll{2};

class async_arrive_op final : public async_wait_op<std::uint64_t> {
public:
    async_arrive_op(barrier& b, std::shared_ptr<hub_core> core, std::shared_ptr<waiter_state> st,
                    clock_type::time_point deadline, async_completion<std::uint64_t> done)
        : async_wait_op(core->rt->io(), std::move(done), "async_arrive_and_wait"), b_(b),
          hub_(barrier_access::hub(b)), core_(std::move(core)), st_(std::move(st)),
          deadline_(deadline), link_(core_->rt->link(hub_.master().where())),
          command_timeout_(hub_.master().where().command_timeout),
          keys_(make_barrier_keys(hub_.options().prefix, b.name())), member_(random_token()) {}

private:
    void begin() override {
        wake_.emplace(core_, st_, waker());
        confirm_until_ = clock_type::now() + hub_.options().subscribe_timeout;
        await_confirmed();
    }

    // Before the arrival nothing counts on the server: done at once. After it, a wait ends
    // now (its continuation withdraws); a script in flight (the arrival's too): its reply does.
    void on_cancel() override {
        if (!arriving_) return finish(aborted(), std::nullopt);
        end_wait();
    }

    void on_complete() override {
        wake_.reset();
        // The barrier's anchor keeps the channel's listener: this only drops the route.
        core_->unregister_waiter(st_);
    }

    // Subscribe first, then arrive: a generation that passes after the arrival is then
    // announced to us.
    void await_confirmed() {
        if (cancelled()) return finish(aborted(), std::nullopt);
        std::shared_ptr<pubsub_mux::listener> l;
        {
            std::lock_guard lk(core_->sub_mu);
            if (auto it = core_->channel_refs.find(st_->names.front());
                it != core_->channel_refs.end())
                l = it->second.listener;
        }
        if (!l)
            return finish(std::make_exception_ptr(connection_error("signal_hub is shut down")),
                          std::nullopt);
        if (l->confirmed()) return arrive();
        if (clock_type::now() >= confirm_until_) {
            try {
                // Throws the server's refusal, if any.
                if (l->wait_confirmed(milliseconds(0))) return arrive();
                throw connection_error(
                    "barrier '" + b_.name() +
                    "': no pub/sub link (master or replica) confirmed the subscription within " +
                    std::to_string(hub_.options().subscribe_timeout.count()) + " ms");
            } catch (...) {
                return finish(std::current_exception(), std::nullopt);
            }
        }
        wait_until(
            clock_type::now() + confirm_poll, [this](bool) { await_confirmed(); }, false);
    }

    void arrive() {
        arriving_ = true;  // from here on an arrival may count on the server
        run("arrive");
    }

    // One run of the barrier script, as barrier::run().
    void run(const char* mode) {
        const auto& opts = b_opts();
        script_call call{
            &barrier_script().for_cluster(false),
            {keys_.state, keys_.arrived, keys_.passed},
            {member_, std::to_string(b_.parties()), std::to_string(opts.arrival_lease.count()),
             keys_.state, hub_.envelope({}), mode, std::to_string(generation_),
             std::to_string(passed_retention(opts).count()),
             std::to_string(opts.idle_ttl.count())}};
        // A withdrawal or refresh must reach the server even past the wait's deadline.
        const auto until = clock_type::now() + (command_timeout_.count() > 0
                                                    ? command_timeout_
                                                    : milliseconds(std::chrono::hours(24)));
        exec(link_, std::move(call), until,
             [this, mode](const link_outcome& o) { replied(mode, o); });
    }

    void replied(std::string_view mode, const link_outcome& o) {
        phase_reply r;
        try {
            if (o.failure) std::rethrow_exception(o.failure);
            if (!o.result.answered()) throw connection_error("barrier: " + o.result.error);
            const auto& v = *o.result.value;
            if (v.is_error()) {
                if (is_parties_mismatch(v.text()))
                    throw parties_mismatch("barrier", v.text(), std::to_string(b_.parties()));
                std::rethrow_exception(
                    reply_exception(v.text(), "EVALSHA", "barrier '" + b_.name() + "'"));
            }
            r = parse_phase(v);
        } catch (...) {
            return finish(std::current_exception(), std::nullopt);
        }
        if (mode == "arrive") generation_ = r.generation;
        if (r.code == passed) return finish(nullptr, generation_);
        if (r.code == lost)
            return finish(std::make_exception_ptr(
                              barrier_lease_lost("barrier '" + b_.name() + "'", generation_)),
                          std::nullopt);
        if (mode == "withdraw")  // withdrawn: it no longer counts
            return finish(cancelled() ? aborted() : nullptr, std::nullopt);
        pause();
    }

    // Waits for a wake or the refresh period (the lease's third), never past the deadline. A
    // wake queued already (the signal may overtake the reply of the script that read the
    // state: two sockets) re-reads at once, as the blocking wait returns it at once.
    void pause() {
        if (cancelled() || clock_type::now() >= deadline_) return run("withdraw");
        if (drain()) return run("refresh");
        wait_until(std::min(deadline_, clock_type::now() + refresh_period(b_opts())), [this](bool) {
            if (cancelled() || clock_type::now() >= deadline_) return run("withdraw");
            (void)drain();  // one re-read answers every wake queued so far
            run("refresh");
        });
    }

    // Drops the queued wakes; true when there was one.
    bool drain() {
        std::lock_guard lk(core_->mu);
        const bool any = !st_->queue.empty();
        st_->queue.clear();
        st_->queued.store(0, std::memory_order_release);
        return any;
    }

    void finish(std::exception_ptr failure, std::optional<std::uint64_t> generation) {
        complete(std::move(failure), generation);
    }

    [[nodiscard]] const barrier_options& b_opts() const noexcept {
        return barrier_access::options(b_);
    }

    barrier& b_;
    signal_hub& hub_;
    std::shared_ptr<hub_core> core_;
    std::shared_ptr<waiter_state> st_;
    clock_type::time_point deadline_;
    std::shared_ptr<async_link> link_;
    milliseconds command_timeout_;
    barrier_keys keys_;
    std::string member_;
    clock_type::time_point confirm_until_;
    std::optional<queue_wake> wake_;
    std::uint64_t generation_ = 0;
    bool arriving_ = false;
};

}  // namespace

std::shared_ptr<async_operation> barrier_access::start(barrier& b, milliseconds timeout,
                                                       async_completion<std::uint64_t> done) {
    if (timeout.count() < 0)
        throw invalid_argument("async_arrive_and_wait: the timeout must not be negative, not " +
                               std::to_string(timeout.count()) + " ms");
    const auto& ep = b.hub_.master().where();
    require_event_loop_endpoint(ep, "async_arrive_and_wait");
    const auto deadline = deadline_after(timeout);
    {
        std::lock_guard lk(b.anchor_mu_);
        if (!b.anchor_) b.anchor_ = hold_channel(b.hub_, b.channel_);
    }
    const auto& core = hub_access::core(b.hub_);
    auto st = std::make_shared<waiter_state>();
    st->names = {b.channel_};
    st->id = random_token();
    core->register_waiter(st);  // subscribes (the anchor already did): confirmed on the loop
    try {
        auto op = std::make_shared<async_arrive_op>(b, core, st, deadline, std::move(done));
        op->start();
        return op;
    } catch (...) {
        core->unregister_waiter(st);
        throw;
    }
}

std::shared_ptr<async_operation> start_async_arrive(barrier& b, milliseconds timeout,
                                                    async_completion<std::uint64_t> done) {
    return barrier_access::start(b, timeout, std::move(done));
}

runtime& runtime_of(barrier& b) { return *hub_access::core(barrier_access::hub(b))->rt; }

}  // namespace redcoord::detail
