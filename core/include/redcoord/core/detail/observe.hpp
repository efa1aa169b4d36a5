#pragma once
/// @file
/// How redcoord's parts report metrics: the catalogue of metric names (one place for names,
/// help texts and types) and null-safe handles, so an instrumented operation costs one null
/// check when metrics are off. Internal to redcoord; not a stable API.

#include <redcoord/core/detail/serial_executor.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/core/metrics.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord {
class runtime;
}

namespace redcoord::detail {

/// Every metric redcoord reports.
enum class metric {
    lock_acquire_seconds,           ///< histogram {kind, name, outcome}
    lock_lost_total,                ///< counter {kind, name}
    redlock_quorum_failures_total,  ///< counter {name}
    election_leader,                ///< gauge {name, identity}
    election_terms_total,           ///< counter {name}
    signal_delivery_seconds,        ///< histogram {}
    queue_ready,                    ///< gauge {name}
    queue_in_flight,                ///< gauge {name}
    queue_dead,                     ///< gauge {name}
    queue_redeliveries_total,       ///< counter {name}
    queue_dead_letters_total,       ///< counter {name}
    pool_in_use,                    ///< gauge {endpoint}
    reconnects_total,               ///< counter {endpoint, link}
    jobs,                           ///< gauge {name, state}
    jobs_paused,                    ///< gauge {name}
    jobs_settled_total,             ///< counter {name, outcome}
    job_run_seconds,                ///< histogram {name, outcome}
    jobs_stalled_total,             ///< counter {name}
    jobs_ticks_total,               ///< counter {name}
    rate_limited_total,             ///< counter {kind, name}
    semaphore_permits,              ///< gauge {name, state}
    semaphore_acquire_seconds,      ///< histogram {name, outcome}
    rwlock_holds,                   ///< gauge {name, mode}
    rwlock_acquire_seconds,         ///< histogram {name, mode, outcome}
};

/// The metric's name, help and (histograms) buckets under `o`.
[[nodiscard]] metric_desc describe(metric m, const metrics_options& o);

// The handles below hand their update to the calling thread's observer outbox when it has one
// (the runtime's timer thread): the backend is user code, and must not delay a watchdog.

/// A counter series, or nothing (metrics off).
class counter_handle {
public:
    counter_handle() = default;
    /// Wraps `p` (may be null).
    explicit counter_handle(std::shared_ptr<metric_counter> p) noexcept : p_(std::move(p)) {}
    /// Adds `by` when on.
    void inc(double by = 1.0) const noexcept {
        if (!p_) return;
        if (auto* o = observer_outbox())
            post_observation(*o, [p = p_, by] { p->inc(by); });
        else
            p_->inc(by);
    }

private:
    std::shared_ptr<metric_counter> p_;
};

/// A gauge series, or nothing (metrics off).
class gauge_handle {
public:
    gauge_handle() = default;
    /// Wraps `p` (may be null).
    explicit gauge_handle(std::shared_ptr<metric_gauge> p) noexcept : p_(std::move(p)) {}
    /// Sets the value when on.
    void set(double v) const noexcept {
        if (!p_) return;
        if (auto* o = observer_outbox())
            post_observation(*o, [p = p_, v] { p->set(v); });
        else
            p_->set(v);
    }
    /// Adds `by` when on.
    void add(double by) const noexcept {
        if (!p_) return;
        if (auto* o = observer_outbox())
            post_observation(*o, [p = p_, by] { p->add(by); });
        else
            p_->add(by);
    }
    /// True when on.
    [[nodiscard]] explicit operator bool() const noexcept { return p_ != nullptr; }

private:
    std::shared_ptr<metric_gauge> p_;
};

/// A histogram series, or nothing (metrics off).
class histogram_handle {
public:
    histogram_handle() = default;
    /// Wraps `p` (may be null).
    explicit histogram_handle(std::shared_ptr<metric_histogram> p) noexcept : p_(std::move(p)) {}
    /// Records `v` when on.
    void observe(double v) const noexcept {
        if (!p_) return;
        if (auto* o = observer_outbox())
            post_observation(*o, [p = p_, v] { p->observe(v); });
        else
            p_->observe(v);
    }
    /// Records the seconds from `start` to now (steady clock) when on.
    void observe_since(std::chrono::steady_clock::time_point start) const noexcept {
        if (p_)
            observe(
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    /// True when on.
    [[nodiscard]] explicit operator bool() const noexcept { return p_ != nullptr; }

private:
    std::shared_ptr<metric_histogram> p_;
};

/// The runtime's backend and options, taken once by an object's constructor to resolve its
/// handles. Every factory returns an empty handle when metrics are off or the backend throws.
class metrics_scope {
public:
    /// The backend `rt` has now (maybe none).
    explicit metrics_scope(const runtime& rt);
    /// True when a backend is installed.
    [[nodiscard]] explicit operator bool() const noexcept { return m_ != nullptr; }
    /// `resource` as the `name` label's value ("" when metrics_options::resource_names is off).
    [[nodiscard]] std::string name(std::string_view resource) const;
    /// `identity` as a label value ("" when metrics_options::identities is off).
    [[nodiscard]] std::string identity(std::string_view identity) const;
    /// The counter series of `m` with `labels`.
    [[nodiscard]] counter_handle counter(metric m, const metric_labels& labels) const noexcept;
    /// The gauge series of `m` with `labels`.
    [[nodiscard]] gauge_handle gauge(metric m, const metric_labels& labels) const noexcept;
    /// The histogram series of `m` with `labels`.
    [[nodiscard]] histogram_handle histogram(metric m, const metric_labels& labels) const noexcept;
    /// See metrics_backend::add_collector(); empty when off.
    [[nodiscard]] std::shared_ptr<void> collector(std::function<void()> fn) const noexcept;

private:
    std::shared_ptr<metrics_backend> m_;
    metrics_options o_;
};

/// Gauges that one collector sets before each scrape, for an object that samples shared state
/// (a queue's lengths). When the object goes (reset(), the destructor) the collector is
/// unregistered, waiting for a scrape in progress, and the gauges read 0 until another object
/// of the same series samples them at the next scrape. Not copyable or movable: the collector
/// holds `this`.
class sampled_gauges {
public:
    sampled_gauges() = default;
    sampled_gauges(const sampled_gauges&) = delete;
    sampled_gauges& operator=(const sampled_gauges&) = delete;
    ~sampled_gauges() { reset(); }
    /// Resolves the gauge series `series` of `ms` and registers `sample`, which returns their
    /// values in the same order; when it throws, the gauges keep their last values. Nothing
    /// when metrics are off. Call once.
    void start(const metrics_scope& ms, const std::vector<std::pair<metric, metric_labels>>& series,
               std::function<std::vector<double>()> sample);
    /// Unregisters the collector and sets the gauges to 0.
    void reset() noexcept;

private:
    std::vector<gauge_handle> gauges_;
    std::shared_ptr<void> collector_;
};

}  // namespace redcoord::detail
REDCOORD_API_END
