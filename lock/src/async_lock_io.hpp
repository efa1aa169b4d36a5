#pragma once
// What the asynchronous operations of a distributed_lock or redlock (async_acquire.cpp,
// async_release.cpp) share on top of core's async_wait_op: the lock's core, one pipelined
// link per node, and sending a round's script over them.

#include "lock_core.hpp"

#include <redcoord/core/detail/async_link.hpp>
#include <redcoord/core/detail/async_script.hpp>
#include <redcoord/core/detail/async_wait_op.hpp>
#include <redcoord/core/runtime.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace redcoord::detail {

template <class T>
class async_lock_io : public async_wait_op<T> {
public:
    using clock_type = std::chrono::steady_clock;

    async_lock_io(lock_core& core, async_completion<T> done, const char* what)
        : async_wait_op<T>(core.rt->io(), std::move(done), what), core_(core),
          command_timeout_(core.transport_->pools().front()->where().command_timeout) {
        for (auto* p : core.transport_->pools()) links_.push_back(core.rt->link(p->where()));
    }

protected:
    static script_call call_of(const lock_round& round) {
        const auto cmd = round.command();
        script_call call{cmd.lua, {}, {}};
        for (auto k : cmd.keys()) call.keys.emplace_back(k);
        for (auto a : cmd.args()) call.args.emplace_back(a);
        return call;
    }

    // Sends the round's script to `node` (EVALSHA, then EVAL on NOSCRIPT) with `deadline` and
    // continues with `then` on this operation's strand (not once it completed). The command
    // is made again from the round for the EVAL, so the link keeps none of it once written.
    // Only for a round whose operation waits for every node's reply: the command reads the
    // lock's keys, and the lock outlives its operations (async.hpp), not their late replies.
    // (A round's command does not change once it is made.)
    void send(std::shared_ptr<const lock_round> round, std::size_t node,
              clock_type::time_point deadline, std::function<void(link_outcome)> then) {
        this->exec(
            links_[node], [round = std::move(round)] { return call_of(*round); }, deadline,
            std::move(then));
    }

    // Sends `round` to `nodes` (empty: every node) and forgets it: a release or a give-back,
    // whose keys left behind expire after their TTL.
    void send_and_forget(const lock_round& round, const std::vector<std::size_t>& nodes = {}) {
        // Each command keeps its own encoded form for a NOSCRIPT resend: the replies may come
        // once the operation, and the lock, are gone.
        const auto deadline = command_deadline();
        auto forget = [](const link_outcome&) {};
        if (nodes.empty()) {
            for (std::size_t i = 0; i < links_.size(); ++i)
                this->exec(links_[i], call_of(round), deadline, forget);
            return;
        }
        for (auto i : nodes) this->exec(links_[i], call_of(round), deadline, forget);
    }

    // The endpoint's command_timeout from now (none: no deadline).
    [[nodiscard]] clock_type::time_point command_deadline() const {
        return command_timeout_.count() > 0 ? clock_type::now() + command_timeout_
                                            : clock_type::time_point::max();
    }

    lock_core& core_;
    std::vector<std::shared_ptr<async_link>> links_;  // one per node, in the nodes' order
    std::chrono::milliseconds command_timeout_;
};

}  // namespace redcoord::detail
