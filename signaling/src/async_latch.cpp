// The asynchronous wait of a latch (async.hpp): latch::wait's loop (subscribed first, then the
// count read, then a wait for a count-down's notice or the recheck interval), with the reads on
// the runtime's pipelined link and the waits as async_wait on the latch's subscription.

#include <redcoord/signaling/async.hpp>

#include "hub_core.hpp"

#include <redcoord/core/deadline.hpp>
#include <redcoord/core/detail/async_link.hpp>
#include <redcoord/core/detail/async_wait_op.hpp>
#include <redcoord/core/detail/refusal.hpp>
#include <redcoord/core/errors.hpp>

#include <boost/asio/post.hpp>

#include <algorithm>

namespace redcoord::detail {

struct latch_access {
    static signal_hub& hub(latch& l) noexcept { return l.hub_; }
    static const std::string& key(const latch& l) noexcept { return l.key_; }
    static std::chrono::milliseconds recheck(const latch& l) noexcept {
        return l.opts_.recheck_interval;
    }
};

namespace {

namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;

class async_latch_op final : public async_wait_op<bool> {
public:
    async_latch_op(latch& l, clock_type::time_point deadline, async_completion<bool> done)
        : async_wait_op(hub_access::core(latch_access::hub(l))->rt->io(), std::move(done),
                        "async_wait"),
          hub_(latch_access::hub(l)), key_(latch_access::key(l)),
          recheck_(latch_access::recheck(l)), deadline_(deadline), rt_(hub_access::core(hub_)->rt),
          link_(hub_access::core(hub_)->rt->link(hub_.master().where())),
          command_timeout_(hub_.master().where().command_timeout), listening_(hub_.listen({key_})) {
    }  // subscribed before the first read

private:
    void begin() override { look(); }

    // A read in flight changes nothing: the wait ends at once.
    void on_cancel() override {
        if (inner_) inner_->cancel();
        complete(aborted(), std::nullopt);
    }

    void look() {
        const auto until = command_timeout_.count() > 0 ? deadline_after(command_timeout_)
                                                        : clock_type::time_point::max();
        exec(link_, {"GET", key_}, until, [this](const link_outcome& o) { read(o); });
    }

    void read(const link_outcome& o) {
        if (!o.result.answered())
            return complete(o.failure ? o.failure
                                      : std::make_exception_ptr(connection_error(
                                            "latch: GET " + key_ + ": " + o.result.error)),
                            std::nullopt);
        const auto& r = *o.result.value;
        if (r.is_error()) return complete(reply_exception(r.text(), "GET", "latch"), std::nullopt);
        const auto v = r.maybe_text();
        if (v && (*v == "0" || (!v->empty() && (*v)[0] == '-'))) return complete(nullptr, true);
        const auto now = clock_type::now();
        if (now >= deadline_) return complete(nullptr, std::nullopt);
        // A count-down's notice, or the recheck interval (a notice can be missed while the
        // subscription is confirmed or the link reconnects): then read again.
        const auto left = std::chrono::ceil<milliseconds>(deadline_ - now);
        inner_ = start_async_wait(
            listening_, std::min(left, recheck_),
            [self = self_as<async_latch_op>()](const std::exception_ptr&,
                                               const std::optional<redcoord::signal>&) {
                asio::post(self->strand_, [self] {
                    if (!self->completed()) self->look();
                });
            });
    }

    signal_hub& hub_;
    std::string key_;
    milliseconds recheck_;
    clock_type::time_point deadline_;
    std::shared_ptr<runtime> rt_;
    std::shared_ptr<async_link> link_;
    milliseconds command_timeout_;
    waiter listening_;
    std::shared_ptr<async_operation> inner_;
};

}  // namespace

std::shared_ptr<async_operation> start_async_latch_wait(latch& l, milliseconds timeout,
                                                        async_completion<bool> done) {
    if (timeout.count() < 0)
        throw invalid_argument("async_wait: the timeout must not be negative, not " +
                               std::to_string(timeout.count()) + " ms");
    const auto& ep = latch_access::hub(l).master().where();
    require_event_loop_endpoint(ep, "async_wait of a latch");
    auto op = std::make_shared<async_latch_op>(l, deadline_after(timeout), std::move(done));
    op->start();
    return op;
}

runtime& runtime_of(latch& l) { return *hub_access::core(latch_access::hub(l))->rt; }

}  // namespace redcoord::detail
