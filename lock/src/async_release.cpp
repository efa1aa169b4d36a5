// The asynchronous release of a distributed_lock or redlock (async.hpp): release()'s round,
// sent over the runtime's pipelined links instead of a pooled connection, its verdict taken
// on the event loop when every node has answered.

#include <redcoord/lock/async.hpp>

#include "async_lock_io.hpp"
#include "lock_core.hpp"

#include <redcoord/core/errors.hpp>
#include <redcoord/lock/errors.hpp>

namespace redcoord::detail {

class async_release_op final : public async_lock_io<bool> {
public:
    async_release_op(lock_core& core, async_completion<bool> done)
        : async_lock_io(core, std::move(done), "async_release") {}

    // Takes the holding at once (held() is false when the initiation returns) and sends its
    // release from the strand.
    void start_release() {
        held_ = core_.take_hold(floor_);
        start();
    }

private:
    // The release is on its way regardless; only the wait for its verdict ends.
    void on_cancel() override { complete(aborted(), std::nullopt); }

    void on_complete() override {
        if (held_) core_.gate.leave();
    }

    void begin() override {
        if (!held_) return complete(nullptr, std::nullopt);
        // Sent to every node, as release() does: a node left out keeps our key (and its
        // waiters asleep) until the TTL.
        round_ =
            std::make_shared<lock_round>(core_.engine_.release(*held_, floor_, core_.lease_now()));
        outstanding_ = links_.size();
        const auto deadline = command_deadline();
        for (std::size_t i = 0; i < links_.size(); ++i)
            send(round_, i, deadline, [this, i](link_outcome o) { answered(i, std::move(o)); });
    }

    void answered(std::size_t node, link_outcome o) {
        std::exception_ptr failure = o.failure;
        if (o.result.answered()) {
            if (o.result.value->is_error())
                failure = reply_exception(o.result.value->text(), "EVALSHA",
                                          "lock '" + core_.resource + "'");
            round_->on_result(node, o.result, core_.lease_now());
        } else if (o.sent) {
            round_->on_result(node, o.result, core_.lease_now());
        } else {
            round_->on_not_sent(node, node_outcome::status::unreachable, o.result.error);
        }
        if (failure && !first_failure_) first_failure_ = failure;
        if (--outstanding_ > 0) return;
        switch (core_.engine_.decide_release(*round_)) {
            case release_verdict::released: return complete(nullptr, true);
            case release_verdict::not_ours: return complete(nullptr, false);
            case release_verdict::unknown: break;
        }
        // The single instance reports its node's failure, as release() does.
        if (links_.size() == 1 && first_failure_) return complete(first_failure_, std::nullopt);
        complete(std::make_exception_ptr(outcome_unknown(core_.engine_.release_unknown(*round_))),
                 std::nullopt);
    }

    std::optional<lock_acquisition> held_;
    bool floor_ = false;
    std::shared_ptr<lock_round> round_;  // shared with its commands in flight (their EVALs)
    std::size_t outstanding_ = 0;
    std::exception_ptr first_failure_;
};

std::shared_ptr<async_operation> lock_core::async_release(async_completion<bool> done) {
    require_async_endpoints("async_release");
    auto op = std::make_shared<async_release_op>(*this, std::move(done));
    op->start_release();
    return op;
}

}  // namespace redcoord::detail
