#pragma once
/// @file
/// The runtime's timer service: one thread that keeps every primitive's due times (lock
/// watchdogs and loss notices, election rounds, queue heartbeats and recovery, barrier
/// heartbeats, held-back releases) and a few tick workers that run them. Internal to redcoord
/// (reached through runtime::timers()); not a stable API.

#include <redcoord/core/export.hpp>
#include <redcoord/core/runtime_clock.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

REDCOORD_API_BEGIN
namespace redcoord::detail {

class strand;

/// Keeps the due times of timers and runs their ticks on tick workers.
///
/// Idle tick workers wait for the earliest due time themselves and run the tick that falls
/// due (no hand-off between threads on the way to a watchdog). A tick may do blocking Redis
/// I/O bounded by its own timeouts: while it blocks, the other workers go on, and when a due
/// tick has waited 10 ms with every worker busy the timer thread (which only watches, and
/// never runs a tick) starts another worker (at most 32 at once; an extra one ends after 2 s
/// without work). So a tick that blocks on a stalled server holds up only its own timer, and a
/// process whose servers answer keeps one tick worker. A tick never runs user code:
/// callbacks go to the runtime's callback executor, and log records and metric updates made on
/// a tick worker are queued to the `observers` strand.
///
/// Due times are read on a runtime_clock: its advance() wakes the service, and a timer that is
/// due then runs at once (tests of the drivers, without sleeping).
///
/// One timer's ticks never run at the same time: a due time that passes while its tick runs
/// is kept and run when the tick returns.
///
/// Thread-safety: every member function may be called from any thread.
class timer_service {
public:
    using time_point = runtime_clock::time_point;

    /// `observers` (may be null): the strand that log sink and metrics backend calls made by
    /// ticks are queued on (set_observer_outbox()); it must outlive the service. `clock`: the
    /// clock of the due times (null: a clock of its own, which nobody advances).
    explicit timer_service(strand* observers = nullptr,
                           std::shared_ptr<runtime_clock> clock = nullptr);
    /// Stops the timer thread and the tick workers after the ticks in progress return, and
    /// joins them; armed timers never fire.
    ~timer_service();
    timer_service(const timer_service&) = delete;
    timer_service& operator=(const timer_service&) = delete;

    /// The clock of the due times.
    [[nodiscard]] runtime_clock& clock() const noexcept;
    /// Number of ticks run so far (tests and diagnostics).
    [[nodiscard]] std::uint64_t ticks_run() const;
    /// Tick workers alive now (one while every tick returns promptly; more while ticks block).
    [[nodiscard]] std::size_t worker_threads() const;
    /// True on a tick worker of this service, or its timer thread.
    [[nodiscard]] bool on_timer_thread() const noexcept;

    struct state;

private:
    friend class timer;
    std::shared_ptr<state> state_;
};

/// One timed task on a timer_service: while armed, `tick()` runs on a tick worker at the due
/// time and returns when to run next (nullopt: disarm).
///
/// Thread-safety: arm() and disarm() may be called from any thread, also from the tick
/// itself (an arm() or disarm() during a tick overrides the time the tick returns).
class timer {
public:
    using time_point = timer_service::time_point;
    using tick_function = std::function<std::optional<time_point>()>;

    /// Registers a disarmed timer. @throws invalid_argument for an empty tick.
    timer(timer_service& service, tick_function tick);
    /// Disarms and waits for a tick in progress to return, unless called from that tick.
    ~timer();
    timer(const timer&) = delete;
    timer& operator=(const timer&) = delete;

    /// Runs the tick at `due` (at once when `due` has passed), replacing any earlier due time.
    /// @throws std::system_error when the service's thread cannot be started.
    void arm(time_point due);
    /// Stops further ticks; a tick in progress finishes (its returned time is ignored).
    void disarm() noexcept;
    /// True while a due time is set.
    [[nodiscard]] bool armed() const;

private:
    std::shared_ptr<timer_service::state> state_;
    std::uint64_t id_;
};

}  // namespace redcoord::detail

REDCOORD_API_END
