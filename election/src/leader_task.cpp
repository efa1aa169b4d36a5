// leader_task without a thread of its own: one chain of steps, each the next one's cause, so
// runs never overlap. A check (a steady_timer on the runtime's event loop, on this task's
// Asio strand) reads the elector's leadership; when leading, the work goes to this task's
// strand of the callback executor, and its end arms the next check. The event loop only reads
// state and arms timers; the user's work never runs on it.

#include <redcoord/core/deadline.hpp>
#include <redcoord/core/detail/serial_executor.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/election/leader_task.hpp>

#include "leadership_watch.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>

namespace redcoord {

namespace asio = boost::asio;

struct leader_task::impl : std::enable_shared_from_this<leader_task::impl> {
    leader_elector& elector;
    std::chrono::milliseconds period;
    work_function work;
    std::shared_ptr<runtime> rt;  // outlives the strands and the timer below
    asio::strand<asio::io_context::executor_type> checks;
    asio::steady_timer timer;  // touched only on `checks`
    // The work's own lane on the callback executor: a slow run delays only this task.
    detail::strand runner;

    std::mutex mu;
    std::condition_variable cv;
    bool stopping = false;
    bool ended = false;                       // the chain saw `stopping` and ends
    std::optional<std::stop_source> current;  // the running call's source, if any
    std::atomic<std::uint64_t> runs{0};

    impl(leader_elector& e, std::chrono::milliseconds p, work_function w)
        : elector(e), period(p), work(std::move(w)), rt(detail::elector_access::shared_runtime(e)),
          checks(asio::make_strand(rt->io())), timer(checks), runner(rt->callbacks()) {}

    // With mu held: whether the chain goes on; when not, it ends here and stop() may return.
    bool going_on() {
        if (!stopping) return true;
        ended = true;
        cv.notify_all();
        return false;
    }

    // On `checks`: reads the leadership (the elector's lock for a moment, no I/O) and hands
    // a run to the callback executor, or waits a period.
    void check() {
        {
            std::lock_guard g(mu);
            if (!going_on()) return;
        }
        const auto l = elector.current_leadership();
        if (l.epoch == 0) return wait_a_period();
        try {
            runner.post([self = shared_from_this(), l] { self->run_once(l); });
        } catch (...) {
            // No callback worker could start: this period has no run; the next check tries
            // again.
            wait_a_period();
        }
    }

    // On `checks`: the next check one period from now.
    void wait_a_period() {
        timer.expires_at(deadline_after(period));
        timer.async_wait([self = shared_from_this()](boost::system::error_code) { self->check(); });
    }

    // On `runner`: one call of `work` under the leadership `l`; its token stops when the task
    // stops or when the elector ends that leadership (directly, not through the `revoked`
    // signal), then the next check is armed.
    void run_once(const leader_elector::leadership& l) {
        std::stop_source src;
        bool run = false;
        {
            std::lock_guard g(mu);
            if (!stopping) {
                src = current.emplace();
                run = true;
            }
        }
        if (run) {
            // Only request_stop() in the callback: it may run on an elector thread holding
            // the elector's lock, and stop_source is thread-safe without ours.
            std::stop_callback relay(l.stop, [src]() mutable { src.request_stop(); });
            runs.fetch_add(1);
            try {
                work(l.epoch, src.get_token());
            } catch (...) {
                // The task keeps running; work reports its own failures.
            }
            std::lock_guard g(mu);
            current.reset();
        }
        after_run();
    }

    // Back to `checks` for the next period (or the chain's end).
    void after_run() noexcept {
        try {
            asio::post(checks, [self = shared_from_this()] {
                {
                    std::lock_guard g(self->mu);
                    if (!self->going_on()) return;
                }
                self->wait_a_period();
            });
        } catch (...) {
            // Cannot queue (no memory): end the chain rather than leave stop() waiting.
            std::lock_guard g(mu);
            ended = true;
            cv.notify_all();
        }
    }
};

leader_task::leader_task(leader_elector& elector, std::chrono::milliseconds period,
                         work_function work) {
    if (period <= std::chrono::milliseconds::zero())
        throw invalid_argument("leader_task period must be > 0 ms");
    if (!work) throw invalid_argument("leader_task needs a work function");
    impl_ = std::make_shared<impl>(elector, period, std::move(work));
    asio::post(impl_->checks, [self = impl_] { self->check(); });
}

leader_task::~leader_task() { stop(); }

void leader_task::stop() noexcept {
    if (!impl_) return;
    {
        std::lock_guard g(impl_->mu);
        if (impl_->ended) return;
        impl_->stopping = true;
        if (impl_->current) impl_->current->request_stop();
    }
    try {
        // A check waiting for its period ends now (the timer is only touched on `checks`).
        asio::post(impl_->checks, [self = impl_] { self->timer.cancel(); });
    } catch (...) {
        // Cannot queue the cancel: the chain still ends at its next check.
    }
    std::unique_lock lk(impl_->mu);
    impl_->cv.wait(lk, [&] { return impl_->ended; });
    // Nothing calls it any more; what it captured goes now, not with the chain's last handler.
    impl_->work = nullptr;
}

std::uint64_t leader_task::runs() const noexcept { return impl_ ? impl_->runs.load() : 0; }

}  // namespace redcoord
