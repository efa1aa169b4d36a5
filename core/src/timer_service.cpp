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

namespace {
// The service whose timer thread or tick worker this is, and the timer whose tick runs here.
thread_local const timer_service::state* current_service = nullptr;
thread_local std::uint64_t current_timer = 0;

// Ticks block on stalled servers by design (bounded by their commands' timeouts): enough
// workers that many stalled objects at once still leave the others theirs.
constexpr executor_options tick_workers{.max_threads = 32,
                                        .grow_after = std::chrono::milliseconds(10),
                                        .idle_retire = std::chrono::milliseconds(2000)};
// A tick that could not be handed to a worker (no thread could start) is tried again then.
constexpr auto retry_handoff = std::chrono::milliseconds(10);
}  // namespace

struct timer_service::state : std::enable_shared_from_this<state> {
    struct slot {
        std::shared_ptr<timer::tick_function> tick;
        std::unique_ptr<strand> lane;  // this timer's queue on the tick workers
        std::optional<time_point> due;
        // Bumped by every arm()/disarm(): a tick handed off before it is skipped, and the time
        // a running tick returns is ignored.
        std::uint64_t generation = 0;
        bool running = false;   // handed to a worker and not yet returned
        bool deferred = false;  // fell due while running: runs again once it returns
    };

    explicit state(strand* o) : observers(o) {}
    strand* const observers;  // the log and metrics outbox of ticks (may be null)
    mutex mu;
    std::condition_variable cv;       // the timer thread waits here for the earliest due time
    std::condition_variable idle_cv;  // a timer's destructor waits here for its running tick
    std::set<std::pair<time_point, std::uint64_t>> queue REDCOORD_GUARDED_BY(mu);
    std::map<std::uint64_t, slot> slots REDCOORD_GUARDED_BY(mu);
    std::uint64_t next_id REDCOORD_GUARDED_BY(mu) = 1;
    std::uint64_t ticks REDCOORD_GUARDED_BY(mu) = 0;
    bool stop REDCOORD_GUARDED_BY(mu) = false;
    // Started under mu by the first arm(); joined by ~timer_service after `stop` is set, when
    // no arm() can start it any more.
    std::thread thread;

    void unqueue(std::uint64_t id, slot& s) REDCOORD_REQUIRES(mu) {
        if (s.due) queue.erase({*s.due, id});
        s.due.reset();
    }

    void enqueue(std::uint64_t id, slot& s, time_point due) REDCOORD_REQUIRES(mu) {
        s.due = due;
        queue.emplace(due, id);
        cv.notify_all();
    }

    // The timer thread: waits for the earliest due time and hands the tick to its lane. It
    // never runs a tick, so no tick can delay another timer's due time.
    void run() REDCOORD_EXCLUDES(mu) {
        current_service = this;
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
            if (s.running) {
                s.deferred = true;
                continue;
            }
            hand_off(id, s);
        }
    }

    void hand_off(std::uint64_t id, slot& s) REDCOORD_REQUIRES(mu) {
        s.running = true;
        try {
            s.lane->post([self = shared_from_this(), id, generation = s.generation, tick = s.tick] {
                self->run_tick(id, generation, *tick);
            });
        } catch (...) {
            s.running = false;  // no worker could start: try again shortly
            enqueue(id, s, clock_type::now() + retry_handoff);
        }
    }

    // On a tick worker.
    void run_tick(std::uint64_t id, std::uint64_t generation, const timer::tick_function& tick)
        REDCOORD_EXCLUDES(mu) {
        set_observer_outbox(observers);
        current_service = this;
        bool skip = false;
        {
            lock_guard l(mu);
            auto it = slots.find(id);
            // Disarmed or re-armed since the hand-off: the tick is not due any more.
            skip = stop || it == slots.end() || it->second.generation != generation;
        }
        std::optional<time_point> next;
        if (!skip) {
            current_timer = id;
            try {
                next = tick();
            } catch (...) {
                next.reset();  // a tick reports its own failures; one that throws stops
            }
            current_timer = 0;
        }
        lock_guard l(mu);
        if (!skip) ++ticks;
        auto it = slots.find(id);
        if (it == slots.end()) return;
        auto& s = it->second;
        s.running = false;
        idle_cv.notify_all();
        if (stop) return;
        if (s.deferred) {
            s.deferred = false;
            enqueue(id, s, clock_type::now());
        } else if (!skip && next && s.generation == generation) {
            enqueue(id, s, *next);
        }
    }
};

timer_service::timer_service(strand* observers)
    : state_(std::make_shared<state>(observers)),
      workers_(std::make_unique<serial_executor>(tick_workers)) {}

timer_service::~timer_service() {
    {
        lock_guard l(state_->mu);
        state_->stop = true;
    }
    state_->cv.notify_all();
    if (state_->thread.joinable()) state_->thread.join();  // it runs no tick: never this thread
    // Drops the ticks not started, waits for the running ones, joins the workers (a worker
    // that released the last owner of the runtime detaches itself).
    workers_.reset();
    lock_guard l(state_->mu);
    for (auto& [id, s] : state_->slots) s.running = false;  // a timer outliving the service
    state_->idle_cv.notify_all();
}

std::uint64_t timer_service::ticks_run() const {
    lock_guard l(state_->mu);
    return state_->ticks;
}

std::size_t timer_service::worker_threads() const { return workers_->threads(); }

bool timer_service::on_timer_thread() const noexcept { return current_service == state_.get(); }

timer::timer(timer_service& service, tick_function tick) : state_(service.state_) {
    if (!tick) throw invalid_argument("timer needs a tick function");
    auto lane = std::make_unique<strand>(*service.workers_);
    lock_guard l(state_->mu);
    id_ = state_->next_id++;
    auto& s = state_->slots[id_];
    s.tick = std::make_shared<tick_function>(std::move(tick));
    s.lane = std::move(lane);
}

timer::~timer() {
    std::unique_ptr<strand> lane;
    {
        unique_lock l(state_->mu);
        auto it = state_->slots.find(id_);
        state_->unqueue(id_, it->second);
        ++it->second.generation;  // a tick handed off and not started is skipped
        it->second.deferred = false;
        // The tick may capture the object that owns this timer: it must be over before that
        // object goes. From inside the tick itself there is nothing to wait for.
        const bool own_tick = current_service == state_.get() && current_timer == id_;
        if (!own_tick)
            state_->idle_cv.wait(l.native(), [&] {
                state_->mu.assert_held();
                return !state_->slots.at(id_).running;
            });
        lane = std::move(it->second.lane);
        state_->slots.erase(it);
    }
    // Outside mu: closing waits for the lane's task to return, and its end takes mu.
    lane.reset();
}

void timer::arm(time_point due) {
    lock_guard l(state_->mu);
    if (state_->stop) return;
    if (!state_->thread.joinable())
        state_->thread = std::thread([s = state_] { s->run(); });  // keeps the state alive
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
    state_->cv.notify_all();
}

bool timer::armed() const {
    lock_guard l(state_->mu);
    const auto& s = state_->slots.at(id_);
    return s.due.has_value() || s.running;
}

}  // namespace redcoord::detail
