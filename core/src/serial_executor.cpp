#include <redcoord/core/detail/serial_executor.hpp>
#include <redcoord/core/detail/thread_annotations.hpp>
#include <redcoord/core/detail/thread_name.hpp>

#include "worker_set.hpp"

#include <condition_variable>
#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace redcoord::detail {

namespace {
// What the calling thread runs now: the executor it works for and the strand of its task.
thread_local const serial_executor::state* current_executor = nullptr;
thread_local std::uint64_t current_strand = 0;
thread_local strand* outbox = nullptr;
}  // namespace

strand* observer_outbox() noexcept { return outbox; }

void set_observer_outbox(strand* s) noexcept { outbox = s; }

void post_observation(strand& s, std::function<void()> fn) noexcept {
    try {
        s.post(std::move(fn));
    } catch (...) {
        // No worker could start: the record or sample is lost, the operation goes on.
    }
}

struct serial_executor::state {
    struct queue {
        // A list, not a deque: an empty list allocates nothing, and most strands (one per
        // object, one per async operation's completion) stay empty for good, while a deque
        // allocates about 600 bytes as it is made.
        std::list<std::function<void()>> tasks;
        bool running = false;  // a task of this strand runs now (on one worker)
        bool closed = false;
    };

    explicit state(executor_options o) : opts(o), workers(o.idle_retire) {
        if (opts.max_threads == 0) opts.max_threads = 1;
    }

    executor_options opts;
    mutex mu;
    std::condition_variable cv;       // idle workers wait for a ready strand
    std::condition_variable done_cv;  // drain()/close() wait for progress
    std::map<std::uint64_t, queue> strands REDCOORD_GUARDED_BY(mu);
    // Strands with a queued task and none running, in the order they became so.
    std::deque<std::uint64_t> ready REDCOORD_GUARDED_BY(mu);
    std::uint64_t next_strand REDCOORD_GUARDED_BY(mu) = 1;
    std::size_t idle REDCOORD_GUARDED_BY(mu) = 0;  // workers waiting for work
    bool stop REDCOORD_GUARDED_BY(mu) = false;
    // The workers; the idle ones beyond the first end once no task has found every worker
    // busy for opts.idle_retire.
    worker_set workers REDCOORD_GUARDED_BY(mu);

    std::size_t started REDCOORD_GUARDED_BY(mu) = 0;  // workers that took work, ever
    bool probation REDCOORD_GUARDED_BY(mu) = false;   // a would-be worker is waiting to see
    std::condition_variable probation_cv;             // ends a probation early (stop)

    void add_worker(const std::shared_ptr<state>& self, bool on_probation) REDCOORD_REQUIRES(mu) {
        // The thread keeps the state alive if it outlives the executor (detached).
        workers.start([s = self, on_probation] {
            name_this_thread("rc-callback");
            s->run(on_probation);
        });
        if (on_probation) {
            probation = true;
        } else {
            ++started;
            workers.all_busy();
        }
    }

    // A ready strand would wait behind busy workers: start a would-be worker that joins in
    // only if that is still so grow_after later. So a strand whose task blocks holds up only its
    // own later tasks (up to max_threads blocked at once), while bursts of quick tasks, which
    // one worker clears sooner, cost no thread that stays.
    // @throws std::system_error when no worker exists and none can be started.
    void grow(const std::shared_ptr<state>& self) REDCOORD_REQUIRES(mu) {
        if (stop || ready.size() <= idle) return;
        if (workers.empty()) {
            add_worker(self, false);  // nothing would ever run the task: let the error out
            return;
        }
        if (probation || workers.size() >= opts.max_threads) return;
        try {
            add_worker(self, true);
        } catch (...) {
            // The busy workers run it later.
        }
    }

    void run(bool on_probation) REDCOORD_EXCLUDES(mu) {
        current_executor = this;
        unique_lock l(mu);
        if (on_probation) {
            probation_cv.wait_for(l.native(), opts.grow_after, [&] {
                mu.assert_held();
                return stop;
            });
            probation = false;
            if (stop) return;
            if (ready.size() <= idle) {  // the backlog cleared: not needed
                workers.retire_self();
                return;
            }
            ++started;
            workers.all_busy();
        }
        while (true) {
            const auto needed = [&] {
                mu.assert_held();  // the wait retakes mu before the predicate runs
                return stop || !ready.empty();
            };
            ++idle;
            const auto woke = workers.wait(cv, l.native(), needed);  // the last worker stays
            --idle;
            if (stop) return;  // the destructor joins every worker it finds
            if (woke == worker_set::woke::retire) return;
            if (woke == worker_set::woke::again) continue;
            const auto id = ready.front();
            ready.pop_front();
            auto it = strands.find(id);
            if (it == strands.end() || it->second.running || it->second.tasks.empty()) continue;
            auto& q = it->second;  // std::map: stays valid until erased, and only we erase it now
            q.running = true;
            if (idle == 0) workers.all_busy();
            auto fn = std::move(q.tasks.front());
            q.tasks.pop_front();
            grow(shared_from_self());
            current_strand = id;
            l.unlock();
            try {
                fn();
            } catch (...) {
                // A throwing user callback must not take every other object's callbacks down.
            }
            fn = nullptr;  // captured state dies outside the lock, before waiters are told
            l.lock();
            current_strand = 0;
            q.running = false;
            if (q.closed)
                strands.erase(it);
            else if (!q.tasks.empty())
                ready.push_back(id);  // behind the strands that became ready meanwhile
            done_cv.notify_all();
        }
    }

    std::shared_ptr<state> shared_from_self() REDCOORD_REQUIRES(mu) { return self_.lock(); }
    std::weak_ptr<state> self_;  // set once by the executor's constructor

    bool busy(std::uint64_t id) const REDCOORD_REQUIRES(mu) {
        auto it = strands.find(id);
        return it != strands.end() && (it->second.running || !it->second.tasks.empty());
    }
};

serial_executor::serial_executor(executor_options opts) : state_(std::make_shared<state>(opts)) {
    state_->self_ = state_;
}

serial_executor::~serial_executor() {
    std::map<std::uint64_t, state::queue> dropped;
    worker_set workers(state_->opts.idle_retire);
    {
        lock_guard l(state_->mu);
        state_->stop = true;
        for (auto& [id, q] : state_->strands) dropped[id].tasks.swap(q.tasks);
        state_->ready.clear();
        workers = state_->workers.take_all();
    }
    state_->cv.notify_all();
    state_->done_cv.notify_all();
    state_->probation_cv.notify_all();
    workers.join_all();  // detaches this thread when the runtime was released from its callback
}

bool serial_executor::on_executor_thread() const noexcept {
    return current_executor == state_.get();
}

std::size_t serial_executor::threads() const {
    lock_guard l(state_->mu);
    return state_->workers.size();
}

std::size_t serial_executor::threads_started() const {
    lock_guard l(state_->mu);
    return state_->started;
}

strand::strand(serial_executor& executor) : state_(executor.state_) {
    lock_guard l(state_->mu);
    id_ = state_->next_strand++;
    state_->strands[id_];
}

strand::~strand() { close(); }

void strand::post(std::function<void()> task) {
    std::vector<std::thread> ended;
    {
        lock_guard l(state_->mu);
        if (state_->stop || closed_) return;
        ended = state_->workers.take_ended();
        auto& q = state_->strands[id_];
        q.tasks.push_back(std::move(task));
        if (!q.running && q.tasks.size() == 1) {
            state_->ready.push_back(id_);
            try {
                state_->grow(state_->shared_from_self());
            } catch (...) {
                q.tasks.pop_back();
                state_->ready.pop_back();
                throw;
            }
            // Under the lock: once it is released the task may run and destroy this strand.
            state_->cv.notify_one();
        }
    }
    for (auto& t : ended) t.join();  // they have returned, or are about to
}

void strand::drain() {
    if (current_executor == state_.get() && current_strand == id_) return;  // would wait for itself
    unique_lock l(state_->mu);
    // Tasks posted later keep it busy longer; callers drain when they have stopped posting.
    state_->done_cv.wait(l.native(), [&] {
        state_->mu.assert_held();
        return state_->stop || !state_->busy(id_);
    });
}

void strand::close() noexcept {
    std::list<std::function<void()>> dropped;
    {
        unique_lock l(state_->mu);
        if (closed_) return;
        closed_ = true;
        auto it = state_->strands.find(id_);
        if (it == state_->strands.end()) return;
        dropped.swap(it->second.tasks);
        it->second.closed = true;
        state_->done_cv.notify_all();
        const bool on_own_task = current_executor == state_.get() && current_strand == id_;
        if (!it->second.running) {
            state_->strands.erase(it);
        } else if (!on_own_task) {
            // The worker erases the entry when the task returns.
            state_->done_cv.wait(l.native(), [&] {
                state_->mu.assert_held();
                return state_->strands.find(id_) == state_->strands.end();
            });
        }
    }
    // `dropped` (with whatever its tasks captured) is destroyed here, outside the lock.
}

}  // namespace redcoord::detail
