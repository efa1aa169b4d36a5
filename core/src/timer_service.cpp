#include <redcoord/core/detail/serial_executor.hpp>
#include <redcoord/core/detail/thread_annotations.hpp>
#include <redcoord/core/detail/timer_service.hpp>
#include <redcoord/core/errors.hpp>

#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

namespace redcoord::detail {

struct timer_service::state {
    struct slot {
        std::shared_ptr<timer::tick_function> tick;
        std::optional<time_point> due;
        std::uint64_t generation =
            0;  // bumped by every arm()/disarm(): a tick's return is stale then
    };

    explicit state(strand* o) : observers(o) {}
    strand* const observers;  // the log and metrics outbox of ticks (may be null)
    mutex mu;
    std::condition_variable cv;       // the thread waits here for the earliest due time
    std::condition_variable idle_cv;  // a timer's destructor waits here for its running tick
    std::set<std::pair<time_point, std::uint64_t>> queue REDCOORD_GUARDED_BY(mu);
    std::map<std::uint64_t, slot> slots REDCOORD_GUARDED_BY(mu);
    std::uint64_t next_id REDCOORD_GUARDED_BY(mu) = 1;
    std::uint64_t running REDCOORD_GUARDED_BY(mu) = 0;  // id whose tick runs now, 0 when none
    std::uint64_t ticks REDCOORD_GUARDED_BY(mu) = 0;
    bool stop REDCOORD_GUARDED_BY(mu) = false;
    // Started under mu by the first arm(); joined by ~timer_service after `stop` is set, when
    // no arm() can start it any more.
    std::thread thread;

    void unqueue(std::uint64_t id, slot& s) REDCOORD_REQUIRES(mu) {
        if (s.due) queue.erase({*s.due, id});
        s.due.reset();
    }

    void run() REDCOORD_EXCLUDES(mu) {
        set_observer_outbox(observers);
        unique_lock l(mu);
        while (!stop) {
            if (queue.empty()) {
                cv.wait(l.native(), [&] {
                    mu.assert_held();  // the wait retakes mu before the predicate runs
                    return stop || !queue.empty();
                });
                continue;
            }
            const auto [due, id] = *queue.begin();
            if (clock_type::now() < due) {
                cv.wait_until(l.native(), due);  // woken early by any arm/disarm: look again
                continue;
            }
            queue.erase(queue.begin());
            auto& s = slots.at(id);
            s.due.reset();
            const auto generation = s.generation;
            auto tick = s.tick;
            running = id;
            l.unlock();
            std::optional<time_point> next;
            try {
                next = (*tick)();
            } catch (...) {
                next.reset();  // a tick reports its own failures; one that throws stops
            }
            l.lock();
            running = 0;
            ++ticks;
            idle_cv.notify_all();
            auto it = slots.find(id);
            if (it == slots.end() || it->second.generation != generation || !next) continue;
            it->second.due = *next;
            queue.emplace(*next, id);
        }
    }
};

timer_service::timer_service(strand* observers) : state_(std::make_shared<state>(observers)) {}

timer_service::~timer_service() {
    {
        lock_guard l(state_->mu);
        state_->stop = true;
    }
    state_->cv.notify_all();
    if (state_->thread.joinable()) {
        if (state_->thread.get_id() == std::this_thread::get_id())
            state_->thread.detach();
        else
            state_->thread.join();
    }
}

std::uint64_t timer_service::ticks_run() const {
    lock_guard l(state_->mu);
    return state_->ticks;
}

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
    state_->slots.erase(it);
    // The tick may capture the object that owns this timer: it must be over before that
    // object goes. From inside the tick itself there is nothing to wait for.
    if (state_->thread.get_id() != std::this_thread::get_id())
        state_->idle_cv.wait(l.native(), [&] {
            state_->mu.assert_held();
            return state_->running != id_;
        });
}

void timer::arm(time_point due) {
    {
        lock_guard l(state_->mu);
        if (state_->stop) return;
        if (!state_->thread.joinable())
            state_->thread =
                std::thread([s = state_] { s->run(); });  // keeps the state alive if detached
        auto& s = state_->slots.at(id_);
        state_->unqueue(id_, s);
        ++s.generation;
        s.due = due;
        state_->queue.emplace(due, id_);
        // Under the lock: once it is released the tick may run and destroy this timer.
        state_->cv.notify_all();
    }
}

void timer::disarm() noexcept {
    {
        lock_guard l(state_->mu);
        auto& s = state_->slots.at(id_);
        state_->unqueue(id_, s);
        ++s.generation;
        state_->cv.notify_all();
    }
}

bool timer::armed() const {
    lock_guard l(state_->mu);
    return state_->slots.at(id_).due.has_value() || state_->running == id_;
}

}  // namespace redcoord::detail
