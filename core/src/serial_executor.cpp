#include <redcoord/core/detail/serial_executor.hpp>
#include <redcoord/core/detail/thread_annotations.hpp>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

namespace redcoord::detail {

struct serial_executor::state {
    struct task {
        std::uint64_t strand;
        std::function<void()> fn;
    };
    mutex mu;
    std::condition_variable cv;       // the thread waits for work
    std::condition_variable done_cv;  // drain()/close() wait for progress
    std::deque<task> tasks REDCOORD_GUARDED_BY(mu);
    std::uint64_t next_strand REDCOORD_GUARDED_BY(mu) = 1;
    std::uint64_t running REDCOORD_GUARDED_BY(mu) = 0;  // strand whose task runs now, 0 when none
    bool stop REDCOORD_GUARDED_BY(mu) = false;
    // Started under mu by the first post(); joined by ~serial_executor after `stop` is set,
    // when no post() can start it any more.
    std::thread thread;

    void run() REDCOORD_EXCLUDES(mu) {
        unique_lock l(mu);
        while (true) {
            cv.wait(l.native(), [&] {
                mu.assert_held();  // the wait retakes mu before the predicate runs
                return stop || !tasks.empty();
            });
            if (stop) return;
            auto t = std::move(tasks.front());
            tasks.pop_front();
            running = t.strand;
            l.unlock();
            try {
                t.fn();
            } catch (...) {
                // A throwing user callback must not take every other object's callbacks down.
            }
            t.fn = nullptr;  // captured state dies outside the lock, before waiters are told
            l.lock();
            running = 0;
            done_cv.notify_all();
        }
    }

    bool busy(std::uint64_t strand) const REDCOORD_REQUIRES(mu) {
        if (running == strand) return true;
        for (const auto& t : tasks)
            if (t.strand == strand) return true;
        return false;
    }
};

serial_executor::serial_executor() : state_(std::make_shared<state>()) {}

serial_executor::~serial_executor() {
    std::deque<state::task> dropped;
    {
        lock_guard l(state_->mu);
        state_->stop = true;
        dropped.swap(state_->tasks);
    }
    state_->cv.notify_all();
    if (state_->thread.joinable()) {
        if (state_->thread.get_id() == std::this_thread::get_id())
            state_->thread.detach();
        else
            state_->thread.join();
    }
}

bool serial_executor::on_executor_thread() const noexcept {
    return state_->thread.get_id() == std::this_thread::get_id();
}

strand::strand(serial_executor& executor) : state_(executor.state_) {
    lock_guard l(state_->mu);
    id_ = state_->next_strand++;
}

strand::~strand() { close(); }

void strand::post(std::function<void()> task) {
    {
        lock_guard l(state_->mu);
        if (state_->stop || closed_) return;
        if (!state_->thread.joinable())
            state_->thread =
                std::thread([s = state_] { s->run(); });  // keeps the state alive if detached
        state_->tasks.push_back({id_, std::move(task)});
        // Under the lock: once it is released the task may run and destroy this strand.
        state_->cv.notify_one();
    }
}

void strand::drain() {
    if (state_->thread.get_id() == std::this_thread::get_id()) return;
    unique_lock l(state_->mu);
    // Tasks posted later keep it busy longer; callers drain when they have stopped posting.
    state_->done_cv.wait(l.native(), [&] {
        state_->mu.assert_held();
        return state_->stop || !state_->busy(id_);
    });
}

void strand::close() noexcept {
    std::deque<serial_executor::state::task> dropped;
    {
        unique_lock l(state_->mu);
        if (closed_) return;
        closed_ = true;
        for (auto it = state_->tasks.begin(); it != state_->tasks.end();) {
            if (it->strand == id_) {
                dropped.push_back(std::move(*it));
                it = state_->tasks.erase(it);
            } else {
                ++it;
            }
        }
        state_->done_cv.notify_all();
        if (state_->thread.get_id() != std::this_thread::get_id())
            state_->done_cv.wait(l.native(), [&] {
                state_->mu.assert_held();
                return state_->running != id_;
            });
    }
    // `dropped` (with whatever its tasks captured) is destroyed here, outside the lock.
}

}  // namespace redcoord::detail
