#pragma once
/// @file
/// The runtime's timer service: one thread that runs every primitive's timed work (lock
/// watchdogs and loss notices, election rounds, queue heartbeats and recovery, barrier
/// heartbeats). Internal to redcoord (reached through runtime::timers()); not a stable API.

#include <redcoord/core/export.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

REDCOORD_API_BEGIN
namespace redcoord::detail {

class strand;

/// Runs timed ticks on one shared thread, started on the first arm() and joined by the
/// destructor.
///
/// A tick may do blocking Redis I/O bounded by its own timeouts; while it runs, other ticks
/// that fall due wait for it (they run late, never concurrently). Ticks that must not be
/// delayed by a stalled server keep their commands' timeouts short. A tick never runs user
/// code: callbacks go to the runtime's callback executor, and log records and metric
/// updates made on this thread are queued to the `observers` strand.
///
/// Thread-safety: every member function may be called from any thread.
class timer_service {
public:
    using clock_type = std::chrono::steady_clock;
    using time_point = clock_type::time_point;

    /// `observers` (may be null): the strand that log sink and metrics backend calls made by
    /// ticks are queued on (set_observer_outbox()); it must outlive the service.
    explicit timer_service(strand* observers = nullptr);
    /// Stops the thread after the tick in progress (if any) returns; armed timers never fire.
    ~timer_service();
    timer_service(const timer_service&) = delete;
    timer_service& operator=(const timer_service&) = delete;

    /// Number of ticks run so far (tests and diagnostics).
    [[nodiscard]] std::uint64_t ticks_run() const;

    struct state;

private:
    friend class timer;
    std::shared_ptr<state> state_;
};

/// One timed task on a timer_service: while armed, `tick()` runs on the service's thread at
/// the due time and returns when to run next (nullopt: disarm).
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
