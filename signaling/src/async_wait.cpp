// The asynchronous wait of a signal_hub waiter (async.hpp): the waiter's queue, a wake-up the
// pub/sub reader posts to this operation's strand, and a steady_timer for the timeout, all on
// the runtime's event loop instead of a thread blocked on the queue's condition variable.

#include <redcoord/signaling/async.hpp>

#include "hub_core.hpp"

#include <redcoord/core/deadline.hpp>
#include <redcoord/core/detail/async_wait_op.hpp>
#include <redcoord/core/errors.hpp>

namespace redcoord::detail {

using clock_type = std::chrono::steady_clock;

namespace {

class signal_wait_op final : public async_wait_op<redcoord::signal> {
public:
    signal_wait_op(std::shared_ptr<hub_core> core, std::shared_ptr<waiter_state> st,
                   clock_type::time_point deadline, async_completion<redcoord::signal> done)
        : async_wait_op(core->rt->io(), std::move(done), "async_wait"), core_(std::move(core)),
          st_(std::move(st)), deadline_(deadline) {}

private:
    void begin() override {
        wake_.emplace(core_, st_, waker());
        // A link read on demand must be watched while we wait, as a blocking wait raises it.
        if (auto* l = core_->mux->readable_link()) demand_.emplace(*l);
        look();
    }

    // Nothing of it is on the server: a cancellation ends it at once.
    void on_cancel() override { complete(aborted(), std::nullopt); }

    void on_complete() override {
        wake_.reset();
        demand_.reset();
    }

    // Takes the oldest queued signal, if any, and completes with it (with nothing once the
    // hub is gone or the deadline passed); else waits for the next wake.
    void look() {
        std::optional<redcoord::signal> got;
        bool closed = false;
        {
            std::lock_guard lk(core_->mu);
            closed = core_->closed;
            if (!st_->queue.empty()) {
                got = std::move(st_->queue.front());
                st_->queue.pop_front();
                st_->queued.store(st_->queue.size(), std::memory_order_release);
            }
        }
        if (got || closed || clock_type::now() >= deadline_)
            return complete(nullptr, std::move(got));
        wait_until(deadline_, [this](bool) { look(); });
    }

    std::shared_ptr<hub_core> core_;
    std::shared_ptr<waiter_state> st_;
    clock_type::time_point deadline_;
    std::optional<demand_hold> demand_;
    std::optional<queue_wake> wake_;
};

}  // namespace

runtime& runtime_of(const waiter& w) {
    const auto& core = waiter_access::core(w);
    if (!core || !waiter_access::state(w))
        throw invalid_argument("async_wait: the waiter is empty (moved from)");
    return *core->rt;
}

std::shared_ptr<async_operation> start_async_wait(waiter& w, std::chrono::milliseconds timeout,
                                                  async_completion<redcoord::signal> done) {
    if (timeout.count() < 0)
        throw invalid_argument("async_wait: the timeout must not be negative, not " +
                               std::to_string(timeout.count()) + " ms");
    (void)runtime_of(w);
    auto op = std::make_shared<signal_wait_op>(waiter_access::core(w), waiter_access::state(w),
                                               deadline_after(timeout), std::move(done));
    op->start();
    return op;
}

}  // namespace redcoord::detail
