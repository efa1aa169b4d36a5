#pragma once
/// @file
/// Metrics of redcoord's primitives: an abstract backend (counters, gauges, histograms with
/// label sets) that a runtime carries, and the built-in registry that renders the Prometheus
/// text exposition format 0.0.4 (https://prometheus.io/docs/instrumenting/exposition_formats/).
///
/// Names follow the Prometheus conventions (https://prometheus.io/docs/practices/naming/):
/// base units (seconds), `_total` for counters, `redcoord_` prefix. Off by default: a runtime
/// without a backend costs each instrumented operation one null check.
///
/// Cost when on: a primitive resolves its label sets to handles once, when it is constructed,
/// and each operation then costs a virtual call and an atomic update (no map lookup, no string
/// built). So install the backend (runtime::set_metrics()) before creating the primitives it
/// should count; objects created before keep reporting to nothing.

#include <redcoord/core/export.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord {

/// Label names and values of one series, e.g. `{{"kind", "lock"}, {"outcome", "acquired"}}`.
/// Every series of a metric must use the same label names in the same order.
using metric_labels = std::vector<std::pair<std::string, std::string>>;

/// A monotonically increasing count of one series.
/// Thread-safety: inc() may be called from any thread at once.
class metric_counter {
public:
    virtual ~metric_counter() = default;
    /// Adds `by` (>= 0; negative values are ignored by the built-in registry).
    virtual void inc(double by = 1.0) noexcept = 0;
};

/// A value of one series that goes up and down.
/// Thread-safety: every member may be called from any thread at once.
class metric_gauge {
public:
    virtual ~metric_gauge() = default;
    /// Sets the value.
    virtual void set(double v) noexcept = 0;
    /// Adds `by` (may be negative).
    virtual void add(double by) noexcept = 0;
};

/// A distribution of observed values of one series, in cumulative buckets.
/// Thread-safety: observe() may be called from any thread at once.
class metric_histogram {
public:
    virtual ~metric_histogram() = default;
    /// Records one observation (durations in seconds).
    virtual void observe(double v) noexcept = 0;
};

/// Describes one metric (a family of series): its name, help text and, for histograms, the
/// upper bounds of its buckets.
struct metric_desc {
    std::string name;             ///< Prometheus name, e.g. `redcoord_lock_acquire_seconds`.
    std::string help;             ///< One line of help (HELP); may contain `\` and newlines.
    std::vector<double> buckets;  ///< Histograms only: increasing upper bounds (`+Inf` added).
};

/// The interface redcoord reports metrics through. Implement it to forward to another system
/// (an OpenTelemetry meter, StatsD, ...), or use metrics_registry (Prometheus text).
///
/// redcoord calls the factory functions when it constructs an object (a lock, an elector, a
/// queue, a pool), once per label set, and keeps the handle for the object's life; the hot
/// path then only calls the handle. A factory asked twice for the same name and labels should
/// return the same series (the registry does), since several objects may share a resource.
///
/// Thread-safety: the factories and add_collector() may be called from any thread at once;
/// implementations must allow that. Updates that redcoord makes on a runtime's timer thread
/// reach the series on that runtime's callback executor (queued, in order), so a slow backend
/// never delays a watchdog.
class metrics_backend {
public:
    virtual ~metrics_backend() = default;
    /// The counter series `d.name` with `labels`. Never null.
    /// @throws invalid_argument (registry) when the name or label names are not valid
    ///         Prometheus names or differ from the metric's earlier registration.
    virtual std::shared_ptr<metric_counter> counter(const metric_desc& d,
                                                    const metric_labels& labels) = 0;
    /// The gauge series `d.name` with `labels`. Never null. Throws as counter().
    virtual std::shared_ptr<metric_gauge> gauge(const metric_desc& d,
                                                const metric_labels& labels) = 0;
    /// The histogram series `d.name` with `labels`, buckets `d.buckets`. Never null. Throws as
    /// counter().
    virtual std::shared_ptr<metric_histogram> histogram(const metric_desc& d,
                                                        const metric_labels& labels) = 0;
    /// Registers `fn`, to be called before each scrape (collection) so it can set gauges whose
    /// value is sampled then (a queue's length). The returned handle unregisters it when
    /// destroyed, waiting for a call in progress to finish. A backend that never samples may
    /// return an empty handle (the built-in registry calls it on every write).
    /// @param fn must not throw out (exceptions are swallowed) and should return quickly.
    [[nodiscard]] virtual std::shared_ptr<void> add_collector(std::function<void()> fn);
};

/// Which label sets redcoord attaches (cardinality control for operators).
///
/// Resource names (lock resources, election names, queue names) become a `name` label by
/// default: one series per resource. A process that creates many short-lived resources (one
/// lock per order id) should turn `resource_names` off; the metrics are then aggregated per
/// kind under `name=""`.
struct metrics_options {
    /// Label series with the resource's name (`name="orders"`). Off: `name=""`.
    bool resource_names = true;
    /// Label `redcoord_election_leader` with the elector's identity. Off: `identity=""`.
    bool identities = true;
    /// Buckets of every `_seconds` histogram, in seconds.
    std::vector<double> seconds_buckets{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                        0.1,    0.25,  0.5,    1,     2.5,  5,     10};
};

/// The built-in metrics backend: keeps every series in memory (atomics) and writes them in
/// the Prometheus text format 0.0.4.
///
/// Series live as long as the registry (Prometheus expects a series to persist; a gauge of a
/// gone object is set to 0 by that object). Thread-safety: every member may be called from
/// any thread at once; updates never take a lock.
class metrics_registry : public metrics_backend {
public:
    metrics_registry();
    ~metrics_registry() override;
    metrics_registry(const metrics_registry&) = delete;
    metrics_registry& operator=(const metrics_registry&) = delete;

    /// See metrics_backend::counter().
    std::shared_ptr<metric_counter> counter(const metric_desc& d,
                                            const metric_labels& labels) override;
    /// See metrics_backend::gauge().
    std::shared_ptr<metric_gauge> gauge(const metric_desc& d, const metric_labels& labels) override;
    /// See metrics_backend::histogram().
    std::shared_ptr<metric_histogram> histogram(const metric_desc& d,
                                                const metric_labels& labels) override;
    /// See metrics_backend::add_collector().
    [[nodiscard]] std::shared_ptr<void> add_collector(std::function<void()> fn) override;

    /// Runs the collectors, then writes every metric in the text format 0.0.4 (metrics sorted
    /// by name, series in label order; HELP and TYPE lines; label values escaped; histograms
    /// as `_bucket{le=...}`, `_sum`, `_count`).
    void write_prometheus(std::ostream& out) const;
    /// write_prometheus() into a string.
    [[nodiscard]] std::string prometheus_text() const;

    /// The content type of the text format, for an HTTP response.
    static constexpr std::string_view content_type = "text/plain; version=0.0.4; charset=utf-8";

private:
    struct family;
    struct collectors;
    family& family_for(const metric_desc& d, int type, const metric_labels& labels);
    mutable std::mutex mu_;
    std::map<std::string, std::unique_ptr<family>, std::less<>> families_;
    std::shared_ptr<collectors> collectors_;  // shared with the handles add_collector() returns
};

/// Writes `v` as the text format writes sample values (`+Inf`, `-Inf`, `NaN`, else the
/// shortest decimal that reads back as `v`).
[[nodiscard]] std::string format_metric_value(double v);
/// Escapes a label value for the text format (`\` → `\\`, `"` → `\"`, newline → `\n`).
[[nodiscard]] std::string escape_label_value(std::string_view v);

}  // namespace redcoord
REDCOORD_API_END
