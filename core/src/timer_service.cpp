#include <redcoord/core/detail/serial_executor.hpp>
#include <redcoord/core/detail/thread_annotations.hpp>
#include <redcoord/core/detail/thread_name.hpp>
#include <redcoord/core/detail/timer_service.hpp>
#include <redcoord/core/errors.hpp>

#include "worker_set.hpp"

#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

namespace redcoord::detail {

namespace {
// The service whose timer thread or tick worker this is, and the timer whose tick runs here.
thread_local const timer_service::state* current_service = nullptr;
thread_local std::uint64_t current_timer = 0;

// Ticks block on stalled servers by design (bounded by their commands' timeouts): enough
// workers that many stalled objects at once still leave the others theirs.
constexpr std::size_t max_workers = 32;
// How long a due tick waits with every worker busy before another worker starts.
constexpr auto grow_after = std::chrono::milliseconds(10);
// When no tick has found every worker busy for this long, the idle workers beyond the first
// end (those waiting to be needed; the one waiting for the next due time stays).
constexpr auto idle_retire = std::chrono::milliseconds(2000);
}  // namespace

struct timer_service::state : std::enable_shared_from_this<state> {
    struct slot {
        std::shared_ptr<timer::tick_function> tick;
        std::optional<time_point> due;
        // Bumped by every arm()/disarm(): the time a running tick returns is ignored then.
        std::uint64_t generation = 0;
        bool running = false;   // a worker runs its tick now
        bool deferred = false;  // fell due while running: runs again once it returns
    };

    state(strand* o, std::shared_ptr<runtime_clock> c) : observers(o), clock(std::move(c)) {}
    strand* const observers;  // the log and metrics outbox of ticks (may be null)
    // Due times are on this clock; its advance() wakes the waits below (wake()).
    const std::shared_ptr<runtime_clock> clock;
    std::uint64_t clock_registration = 0;  // set once, before any thread of the service starts
    mutex mu;
    std::condition_variable work_cv;   // idle workers wait here for the earliest due time
    std::condition_variable watch_cv;  // the timer thread waits here
    std::condition_variable idle_cv;   // a timer's destructor waits here for its running tick
    std::set<std::pair<time_point, std::uint64_t>> queue REDCOORD_GUARDED_BY(mu);
    std::map<std::uint64_t, slot> slots REDCOORD_GUARDED_BY(mu);
    std::uint64_t next_id REDCOORD_GUARDED_BY(mu) = 1;
    std::uint64_t ticks REDCOORD_GUARDED_BY(mu) = 0;
    bool stop REDCOORD_GUARDED_BY(mu) = false;
    std::size_t idle REDCOORD_GUARDED_BY(mu) = 0;  // workers waiting (for a due time or work)
    // One idle worker waits for the earliest due time; the other idle ones wait to be needed,
    // so they can end (a due time in an hour must not keep every worker alive).
    bool due_watched REDCOORD_GUARDED_BY(mu) = false;
    // The tick workers; those beyond the first end once no tick has found every worker busy
    // for idle_retire. The timer thread is started with the first worker; all are joined by
    // ~timer_service after `stop` is set, when no arm() can start them any more.
    worker_set workers REDCOORD_GUARDED_BY(mu){idle_retire};
    std::thread watcher REDCOORD_GUARDED_BY(mu);

    // The clock moved forward: the earliest due time may have come.
    void wake() REDCOORD_EXCLUDES(mu) {
        lock_guard l(mu);
        work_cv.notify_all();
        watch_cv.notify_all();
    }

    void unqueue(std::uint64_t id, slot& s) REDCOORD_REQUIRES(mu) {
        if (s.due) queue.erase({*s.due, id});
        s.due.reset();
    }

    void enqueue(std::uint64_t id, slot& s, time_point due) REDCOORD_REQUIRES(mu) {
        const bool earliest = queue.empty() || due < queue.begin()->first;
        s.due = due;
        queue.emplace(due, id);
        if (earliest) {
            work_cv.notify_all();
            watch_cv.notify_all();
        }
    }

    // @throws std::system_error when the thread cannot be started.
    void add_worker() REDCOORD_REQUIRES(mu) {
        workers.all_busy();
        // The thread keeps the state alive.
        workers.start([self = shared_from_this()] {
            name_this_thread("rc-tick");
            self->work();
        });
    }

    // Starts the first worker and the timer thread (first arm()).
    // @throws std::system_error when a thread cannot be started.
    void start() REDCOORD_REQUIRES(mu) {
        if (workers.empty()) add_worker();
        if (!watcher.joinable())
            watcher = std::thread([self = shared_from_this()] {
                name_this_thread("rc-timer");
                self->watch();
            });
    }

    // A tick worker: waits for the earliest due time and runs that tick itself.
    void work() REDCOORD_EXCLUDES(mu) {
        set_observer_outbox(observers);
        current_service = this;
        unique_lock l(mu);
        while (!stop) {
            if (queue.empty() || due_watched) {
                // Nothing is due, or another worker waits for it: wait to be needed. The
                // deadline is the pool's, not this worker's, so workers that take turns at the
                // due times still end when the pool has had a worker to spare for idle_retire.
                const auto needed = [&] {
                    mu.assert_held();  // the wait retakes mu before the predicate runs
                    return stop || (!queue.empty() && !due_watched);
                };
                ++idle;
                const auto woke = workers.wait(work_cv, l.native(), needed);
                --idle;
                if (woke == worker_set::woke::retire) return;
                continue;
            }
            const auto [due, id] = *queue.begin();
            if (clock->now() < due) {
                ++idle;
                due_watched = true;
                // Woken early by an earlier due time, or by the clock's advance().
                work_cv.wait_until(l.native(), clock->to_steady(due));
                due_watched = false;
                --idle;
                continue;
            }
            queue.erase(queue.begin());
            if (idle == 0) workers.all_busy();
            // Another worker waits for the next due time while this one runs the tick.
            if (!queue.empty()) work_cv.notify_one();
            auto& s = slots.at(id);
            s.due.reset();
            if (s.running) {
                s.deferred = true;
                continue;
            }
            s.running = true;
            const auto generation = s.generation;
            auto tick = s.tick;
            current_timer = id;
            l.unlock();
            std::optional<time_point> next;
            try {
                next = (*tick)();
            } catch (...) {
                next.reset();  // a tick reports its own failures; one that throws stops
            }
            tick.reset();  // what it captured dies outside the lock
            l.lock();
            current_timer = 0;
            ++ticks;
            auto it = slots.find(id);
            if (it == slots.end()) continue;  // destroyed from its own tick
            auto& done = it->second;
            done.running = false;
            idle_cv.notify_all();
            if (stop) continue;
            if (done.deferred) {
                done.deferred = false;
                enqueue(id, done, clock->now());
            } else if (next && done.generation == generation) {
                enqueue(id, done, *next);
            }
        }
    }

    // The timer thread: never runs a tick. When a due tick has waited grow_after with no
    // worker idle (they all run ticks, some maybe blocked on a stalled server), it starts
    // another worker, so a blocked tick holds up only its own timer.
    void watch() REDCOORD_EXCLUDES(mu) {
        current_service = this;
        unique_lock l(mu);
        while (!stop) {
            for (auto& t : workers.take_ended()) t.join();  // they have returned
            if (queue.empty()) {
                watch_cv.wait(l.native());
                continue;
            }
            // Saturated: a timer armed at the end of time must not wrap around to "late".
            const auto first = queue.begin()->first;
            const auto late =
                first > time_point::max() - grow_after ? time_point::max() : first + grow_after;
            const auto now = clock->now();
            if (now < late || idle > 0 || workers.size() >= max_workers) {
                // Not late yet, or a worker is about to take it, or no more may start: look
                // again a little later (woken early by an earlier due time).
                watch_cv.wait_until(l.native(), clock->to_steady(std::max(late, now + grow_after)));
                continue;
            }
            try {
                add_worker();
            } catch (...) {
                // The busy workers run it later.
            }
            watch_cv.wait_for(l.native(), grow_after);  // give it time to take the tick
        }
    }
};

timer_service::timer_service(strand* observers, std::shared_ptr<runtime_clock> clock)
    : state_(std::make_shared<state>(
          observers, clock ? std::move(clock) : std::make_shared<runtime_clock>())) {
    std::weak_ptr<state> weak = state_;
    state_->clock_registration = state_->clock->on_advance([weak] {
        if (auto s = weak.lock()) s->wake();
    });
}

timer_service::~timer_service() {
    state_->clock->forget_advance(state_->clock_registration);
    std::thread watcher;
    worker_set workers(idle_retire);
    {
        lock_guard l(state_->mu);
        state_->stop = true;
        watcher.swap(state_->watcher);
        workers = state_->workers.take_all();
    }
    state_->work_cv.notify_all();
    state_->watch_cv.notify_all();
    if (watcher.joinable()) watcher.join();  // it runs no tick: never this thread
    // After the tick in progress returns; detached when the last owner of the runtime was
    // released from a tick.
    workers.join_all();
    lock_guard l(state_->mu);
    for (auto& [id, s] : state_->slots) s.running = false;  // a timer outliving the service
    state_->idle_cv.notify_all();
}

std::uint64_t timer_service::ticks_run() const {
    lock_guard l(state_->mu);
    return state_->ticks;
}

std::size_t timer_service::worker_threads() const {
    lock_guard l(state_->mu);
    return state_->workers.size();
}

runtime_clock& timer_service::clock() const noexcept { return *state_->clock; }

bool timer_service::on_timer_thread() const noexcept { return current_service == state_.get(); }

timer::timer(timer_service& service, tick_function tick) : state_(service.state_) {
    if (!tick) throw invalid_argument("timer needs a tick function");
    lock_guard l(state_->mu);
    id_ = state_->next_id++;
    state_->slots[id_].tick = std::make_shared<tick_function>(std::move(tick));
}

timer::~timer() {
    unique_lock l(state_->mu);
    auto it = state_->slots.find(id_);
    state_->unqueue(id_, it->second);
    ++it->second.generation;  // a tick running now is not queued again when it returns
    it->second.deferred = false;
    // The tick may capture the object that owns this timer: it must be over before that
    // object goes. From inside the tick itself there is nothing to wait for.
    const bool own_tick = current_service == state_.get() && current_timer == id_;
    if (!own_tick)
        state_->idle_cv.wait(l.native(), [&] {
            state_->mu.assert_held();
            return !state_->slots.at(id_).running;
        });
    state_->slots.erase(id_);
}

void timer::arm(time_point due) {
    lock_guard l(state_->mu);
    if (state_->stop) return;
    state_->start();
    auto& s = state_->slots.at(id_);
    state_->unqueue(id_, s);
    ++s.generation;
    s.deferred = false;
    // Under the lock: once it is released the tick may run and destroy this timer.
    state_->enqueue(id_, s, due);
}

void timer::disarm() noexcept {
    lock_guard l(state_->mu);
    auto& s = state_->slots.at(id_);
    state_->unqueue(id_, s);
    ++s.generation;
    s.deferred = false;
}

bool timer::armed() const {
    lock_guard l(state_->mu);
    const auto& s = state_->slots.at(id_);
    return s.due.has_value() || s.running;
}

}  // namespace redcoord::detail
