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
    // Sends the round's script to `node` (EVALSHA, then EVAL on NOSCRIPT) with `deadline` and
    // continues with `then` on this operation's strand (not once it completed).
    void send(const lock_round& round, std::size_t node, clock_type::time_point deadline,
              std::function<void(link_outcome)> then) {
        const auto cmd = round.command();
        script_call call{cmd.lua, {}, {}};
        for (auto k : cmd.keys()) call.keys.emplace_back(k);
        for (auto a : cmd.args()) call.args.emplace_back(a);
        this->exec(links_[node], std::move(call), deadline, std::move(then));
    }

    // Sends `round` to `nodes` (empty: every node) and forgets it: a release or a give-back,
    // whose keys left behind expire after their TTL.
    void send_and_forget(lock_round round, const std::vector<std::size_t>& nodes = {}) {
        auto kept = std::make_shared<lock_round>(std::move(round));
        const auto deadline = command_deadline();
        if (nodes.empty()) {
            for (std::size_t i = 0; i < links_.size(); ++i)
                send(*kept, i, deadline, [kept](const link_outcome&) {});
            return;
        }
        for (auto i : nodes) send(*kept, i, deadline, [kept](const link_outcome&) {});
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
