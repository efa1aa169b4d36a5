// The asynchronous wait for leadership (async.hpp): a watcher on the elector's transitions
// that posts to this operation's strand, and a steady_timer for the timeout, both on the
// runtime's event loop, instead of a thread polling is_leader().

#include <redcoord/election/async.hpp>

#include "leadership_watch.hpp"

#include <redcoord/core/deadline.hpp>
#include <redcoord/core/detail/async_wait_op.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/runtime.hpp>

#include <boost/asio/post.hpp>

#include <string>

namespace redcoord::detail {

namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;

namespace {

// True when `e` is an ACL refusal: it will not go away by itself, so a wait ends with it.
bool is_permission_refusal(const std::exception_ptr& e) {
    if (!e) return false;
    try {
        std::rethrow_exception(e);
    } catch (const permission_error&) {
        return true;
    } catch (...) {}
    return false;
}

class async_leader_wait_op final : public async_wait_op<leader_elector::leadership> {
public:
    async_leader_wait_op(leader_elector& e, clock_type::time_point deadline,
                         async_completion<leader_elector::leadership> done)
        : async_wait_op(elector_access::shared_runtime(e)->io(), std::move(done),
                        "async_wait_until_leader"),
          rt_(elector_access::shared_runtime(e)), watchers_(elector_access::watchers(e)),
          deadline_(deadline) {}

    // Registers with the elector (on the caller's thread, so a wait whose elector is
    // destroyed right after the call still hears of it) and looks at the state from there.
    void start_watching(leader_elector& e) {
        first_ = elector_access::watch(e, id_, [weak = weak_from_this()](const leadership_news& n) {
            auto self = std::static_pointer_cast<async_leader_wait_op>(weak.lock());
            if (!self) return;
            asio::post(self->strand_, [self, n] {
                if (!self->completed()) (void)self->heard(n);
            });
        });
        start();
    }

private:
    void begin() override {
        if (heard(first_)) return;
        wait_until(
            deadline_, [this](bool) { complete(nullptr, std::nullopt); }, false);
    }

    void on_cancel() override { complete(aborted(), std::nullopt); }

    void on_complete() override { watchers_->remove(id_); }

    // Completes on a leadership still running, a stop of the elector or an ACL refusal; true
    // when the operation has completed.
    bool heard(const leadership_news& n) {
        if (n.stopped)
            complete(aborted(), std::nullopt);
        else if (n.now.epoch != 0 && !n.now.stop.stop_requested())
            complete(nullptr, n.now);
        else if (is_permission_refusal(n.round_error))
            complete(n.round_error, std::nullopt);
        return completed();
    }

    std::shared_ptr<runtime> rt_;  // keeps the event loop alive
    std::shared_ptr<leadership_watchers> watchers_;
    std::uint64_t id_ = 0;  // written by watch() under the elector's lock
    clock_type::time_point deadline_;
    leadership_news first_;
};

}  // namespace

runtime& runtime_of(leader_elector& elector) { return elector_access::runtime_of(elector); }

std::shared_ptr<async_operation> start_async_wait_until_leader(
    leader_elector& elector, std::chrono::milliseconds timeout,
    async_completion<leader_elector::leadership> done) {
    if (timeout.count() < 0)
        throw invalid_argument("async_wait_until_leader: the timeout must not be negative, not " +
                               std::to_string(timeout.count()) + " ms");
    auto op =
        std::make_shared<async_leader_wait_op>(elector, deadline_after(timeout), std::move(done));
    op->start_watching(elector);
    return op;
}

}  // namespace redcoord::detail
