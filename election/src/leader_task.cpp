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
    boost::signals2::scoped_connection on_revoked;
    std::thread thread;

    impl(leader_elector& e, std::chrono::milliseconds p, work_function w)
        : elector(e), period(p), work(std::move(w)) {}

    void revoke_current() {
        std::lock_guard g(mu);
        if (current) current->request_stop();
    }

    void loop() {
        std::unique_lock lk(mu);
        while (!stopping) {
            // Create the stop source before checking leadership: a revoke delivered after the
            // check stops this run, and one delivered before it made is_leader() false already
            // (the elector clears leadership before queueing `revoked`).
            current.emplace();
            auto token = current->get_token();
            lk.unlock();
            const std::uint64_t epoch = elector.epoch();
            if (epoch != 0) {
                runs.fetch_add(1);
                try {
                    work(epoch, token);
                } catch (...) {
                    // The task keeps running; work reports its own failures.
                }
            }
            lk.lock();
            current.reset();
            cv.wait_for(lk, period, [&] { return stopping; });
        }
    }
};

leader_task::leader_task(leader_elector& elector, std::chrono::milliseconds period, work_function work) {
    if (period <= std::chrono::milliseconds::zero()) throw invalid_argument("leader_task period must be > 0 ms");
    if (!work) throw invalid_argument("leader_task needs a work function");
    impl_ = std::make_shared<impl>(elector, period, std::move(work));
    std::weak_ptr<impl> weak = impl_;
    impl_->on_revoked = elector.revoked.connect([weak](revoke_reason) {
        if (auto self = weak.lock()) self->revoke_current();
    });
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
    impl_->on_revoked.disconnect();
}

std::uint64_t leader_task::runs() const noexcept { return impl_ ? impl_->runs.load() : 0; }

}  // namespace redcoord
