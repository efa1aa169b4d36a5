#include <redcoord/core/deadline.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/election/leader_task.hpp>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

namespace redcoord {

struct leader_task::impl {
    leader_elector& elector;
    std::chrono::milliseconds period;
    work_function work;

    std::mutex mu;
    std::condition_variable cv;
    bool stopping = false;
    std::optional<std::stop_source> current;  // the running call's source, if any
    std::atomic<std::uint64_t> runs{0};
    // The task's own worker, like queue_worker's: it runs the user's leader-only work, which
    // may block for as long as the work takes, so it cannot borrow the runtime's shared timer
    // or callback thread without stalling every other object's ticks and callbacks.
    std::thread thread;

    impl(leader_elector& e, std::chrono::milliseconds p, work_function w)
        : elector(e), period(p), work(std::move(w)) {}

    // One call of `work` under the leadership `l`; its token stops when the task stops or when
    // the elector ends that leadership (directly, not through the `revoked` signal).
    void run_once(const leader_elector::leadership& l) {
        std::stop_source src;
        {
            std::lock_guard g(mu);
            if (stopping) return;
            src = current.emplace();
        }
        {
            // Only request_stop() in the callback: it may run on an elector thread holding the
            // elector's lock, and stop_source is thread-safe without ours.
            std::stop_callback relay(l.stop, [src]() mutable { src.request_stop(); });
            runs.fetch_add(1);
            try {
                work(l.epoch, src.get_token());
            } catch (...) {
                // The task keeps running; work reports its own failures.
            }
        }
        std::lock_guard g(mu);
        current.reset();
    }

    void loop() {
        std::unique_lock lk(mu);
        while (!stopping) {
            lk.unlock();
            const auto l = elector.current_leadership();
            if (l.epoch != 0) run_once(l);
            lk.lock();
            cv.wait_until(lk, deadline_after(period), [&] { return stopping; });
        }
    }
};

leader_task::leader_task(leader_elector& elector, std::chrono::milliseconds period,
                         work_function work) {
    if (period <= std::chrono::milliseconds::zero())
        throw invalid_argument("leader_task period must be > 0 ms");
    if (!work) throw invalid_argument("leader_task needs a work function");
    impl_ = std::make_shared<impl>(elector, period, std::move(work));
    impl_->thread = std::thread([self = impl_.get()] { self->loop(); });
}

leader_task::~leader_task() { stop(); }

void leader_task::stop() noexcept {
    if (!impl_) return;
    {
        std::lock_guard g(impl_->mu);
        impl_->stopping = true;
        if (impl_->current) impl_->current->request_stop();
        impl_->cv.notify_all();
    }
    if (impl_->thread.joinable()) impl_->thread.join();
}

std::uint64_t leader_task::runs() const noexcept { return impl_ ? impl_->runs.load() : 0; }

}  // namespace redcoord
