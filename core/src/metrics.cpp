#include <redcoord/core/errors.hpp>
#include <redcoord/core/metrics.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

namespace redcoord {

namespace {

enum metric_type {
    counter_type = 0,
    gauge_type = 1,
    histogram_type = 2
};
constexpr std::string_view type_names[] = {"counter", "gauge", "histogram"};

bool name_char(char c, bool first, bool colon) {
    const bool alpha =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
    return alpha || (!first && c >= '0' && c <= '9');
}

bool valid_name(std::string_view n, bool colon) {
    if (n.empty()) return false;
    for (std::size_t i = 0; i < n.size(); ++i)
        if (!name_char(n[i], i == 0, colon)) return false;
    return true;
}

std::string escape_help(std::string_view v) {
    std::string out;
    out.reserve(v.size());
    for (char c : v) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

// Relaxed: a scrape needs no ordering with other memory, only untorn values.
void atomic_add(std::atomic<double>& a, double by) noexcept {
    a.fetch_add(by, std::memory_order_relaxed);
}

struct counter_series final : metric_counter {
    std::atomic<double> value{0};
    void inc(double by) noexcept override {
        if (by > 0) atomic_add(value, by);  // a counter never goes down; NaN is dropped too
    }
};

struct gauge_series final : metric_gauge {
    std::atomic<double> value{0};
    void set(double v) noexcept override { value.store(v, std::memory_order_relaxed); }
    void add(double by) noexcept override { atomic_add(value, by); }
};

struct histogram_series final : metric_histogram {
    explicit histogram_series(const std::vector<double>& b) : bounds(b), counts(b.size() + 1) {}
    const std::vector<double> bounds;                // a copy: a handle may outlive its registry
    std::vector<std::atomic<std::uint64_t>> counts;  // per bucket, not cumulative; last is +Inf
    std::atomic<double> sum{0};
    void observe(double v) noexcept override {
        if (std::isnan(v)) return;
        // `le` is inclusive: the first bound >= v.
        const auto i = static_cast<std::size_t>(std::lower_bound(bounds.begin(), bounds.end(), v) -
                                                bounds.begin());
        counts[i].fetch_add(1, std::memory_order_relaxed);
        atomic_add(sum, v);
    }
};

}  // namespace

std::string format_metric_value(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    // Plain decimals where they stay short (bucket bounds read `0.0005`, not `5e-04`), the
    // shortest round-trip form otherwise.
    char buf[400];
    const double a = std::fabs(v);
    const bool fixed = a == 0 || (a >= 1e-6 && a < 1e15);
    const auto r = fixed ? std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed)
                         : std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

std::string escape_label_value(std::string_view v) {
    std::string out;
    out.reserve(v.size());
    for (char c : v) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '"')
            out += "\\\"";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

// NOLINTNEXTLINE(performance-unnecessary-value-param): by value in the public virtual API, as its overrides store it
std::shared_ptr<void> metrics_backend::add_collector(std::function<void()>) { return {}; }

struct metrics_registry::family {
    std::string name, help;
    int type = counter_type;
    std::vector<std::string> label_names;
    std::vector<double> buckets;
    std::map<std::vector<std::string>, std::shared_ptr<void>> series;  // by label values
};

// The collectors, shared with their handles so a handle may outlive the registry.
struct metrics_registry::collectors {
    std::mutex mu;  // held while they run, so unregistering waits for a run in progress
    std::map<std::uint64_t, std::function<void()>> fns;
    std::uint64_t next = 0;
};

metrics_registry::metrics_registry() : collectors_(std::make_shared<collectors>()) {}
metrics_registry::~metrics_registry() = default;

metrics_registry::family& metrics_registry::family_for(const metric_desc& d, int type,
                                                       const metric_labels& labels) {
    if (!valid_name(d.name, true))
        throw invalid_argument("metrics: invalid metric name '" + d.name + "'");
    std::vector<std::string> names;
    names.reserve(labels.size());
    for (const auto& [k, v] : labels) {
        if (!valid_name(k, false) || k.starts_with("__") || (type == histogram_type && k == "le"))
            throw invalid_argument("metrics: invalid label name '" + k + "' of " + d.name);
        names.push_back(k);
    }
    auto it = families_.find(d.name);
    if (it == families_.end()) {
        auto f = std::make_unique<family>();
        f->name = d.name;
        f->help = d.help;
        f->type = type;
        f->label_names = std::move(names);
        if (type == histogram_type) {
            f->buckets = d.buckets;
            f->buckets.erase(
                std::remove_if(f->buckets.begin(), f->buckets.end(),
                               [](double b) { return std::isinf(b) || std::isnan(b); }),
                f->buckets.end());
            if (!std::is_sorted(f->buckets.begin(), f->buckets.end()) ||
                std::adjacent_find(f->buckets.begin(), f->buckets.end()) != f->buckets.end())
                throw invalid_argument("metrics: buckets of " + d.name + " must increase");
        }
        it = families_.emplace(d.name, std::move(f)).first;
        return *it->second;
    }
    family& f = *it->second;
    if (f.type != type)
        throw invalid_argument("metrics: " + d.name + " registered as another type");
    if (f.label_names != names)
        throw invalid_argument("metrics: " + d.name + " registered with other label names");
    return f;
}

namespace {
template <class Series, class... Args>
std::shared_ptr<Series> series_in(std::map<std::vector<std::string>, std::shared_ptr<void>>& m,
                                  const metric_labels& labels, Args&&... args) {
    std::vector<std::string> values;
    values.reserve(labels.size());
    for (const auto& kv : labels) values.push_back(kv.second);
    auto& slot = m[std::move(values)];
    if (!slot) slot = std::make_shared<Series>(std::forward<Args>(args)...);
    return std::static_pointer_cast<Series>(slot);
}
}  // namespace

std::shared_ptr<metric_counter> metrics_registry::counter(const metric_desc& d,
                                                          const metric_labels& labels) {
    std::lock_guard l(mu_);
    return series_in<counter_series>(family_for(d, counter_type, labels).series, labels);
}

std::shared_ptr<metric_gauge> metrics_registry::gauge(const metric_desc& d,
                                                      const metric_labels& labels) {
    std::lock_guard l(mu_);
    return series_in<gauge_series>(family_for(d, gauge_type, labels).series, labels);
}

std::shared_ptr<metric_histogram> metrics_registry::histogram(const metric_desc& d,
                                                              const metric_labels& labels) {
    std::lock_guard l(mu_);
    auto& f = family_for(d, histogram_type, labels);
    return series_in<histogram_series>(f.series, labels, f.buckets);
}

std::shared_ptr<void> metrics_registry::add_collector(std::function<void()> fn) {
    std::uint64_t id = 0;
    {
        std::lock_guard l(collectors_->mu);
        id = collectors_->next++;
        collectors_->fns.emplace(id, std::move(fn));
    }
    // The handle: an empty object whose deleter unregisters (waiting for a run in progress).
    return std::shared_ptr<void>(static_cast<void*>(nullptr), [c = collectors_, id](void*) {
        std::lock_guard l(c->mu);
        c->fns.erase(id);
    });
}

namespace {

// `{a="x",b="y"` without the closing brace, so a histogram can append `le`.
std::string open_labels(const std::vector<std::string>& names,
                        const std::vector<std::string>& values) {
    std::string out;
    for (std::size_t i = 0; i < names.size(); ++i) {
        out += i == 0 ? "{" : ",";
        out += names[i];
        out += "=\"";
        out += escape_label_value(values[i]);
        out += '"';
    }
    return out;
}

std::string close_labels(const std::string& open) {
    return open.empty() ? std::string() : open + "}";
}

}  // namespace

void metrics_registry::write_prometheus(std::ostream& out) const {
    {
        std::lock_guard l(collectors_->mu);
        for (auto& [id, fn] : collectors_->fns) {
            try {
                fn();
            } catch (...) {
                // A collector that fails leaves its gauges as they were.
            }
        }
    }
    std::lock_guard l(mu_);
    for (const auto& [name, fp] : families_) {
        const family& f = *fp;
        if (!f.help.empty()) out << "# HELP " << name << ' ' << escape_help(f.help) << '\n';
        out << "# TYPE " << name << ' ' << type_names[f.type] << '\n';
        for (const auto& [values, sp] : f.series) {
            const std::string labels = open_labels(f.label_names, values);
            if (f.type == counter_type) {
                out << name << close_labels(labels) << ' '
                    << format_metric_value(static_cast<counter_series*>(sp.get())->value.load(
                           std::memory_order_relaxed))
                    << '\n';
            } else if (f.type == gauge_type) {
                out << name << close_labels(labels) << ' '
                    << format_metric_value(static_cast<gauge_series*>(sp.get())->value.load(
                           std::memory_order_relaxed))
                    << '\n';
            } else {
                const auto& h = *static_cast<histogram_series*>(sp.get());
                const std::string sep = labels.empty() ? "{" : labels + ",";
                // _count is the +Inf bucket, both from the same loads, so they always agree.
                std::uint64_t cumulative = 0;
                for (std::size_t i = 0; i < h.counts.size(); ++i) {
                    cumulative += h.counts[i].load(std::memory_order_relaxed);
                    const std::string le =
                        i < f.buckets.size() ? format_metric_value(f.buckets[i]) : "+Inf";
                    out << name << "_bucket" << sep << "le=\"" << le << "\"} " << cumulative
                        << '\n';
                }
                out << name << "_sum" << close_labels(labels) << ' '
                    << format_metric_value(h.sum.load(std::memory_order_relaxed)) << '\n';
                out << name << "_count" << close_labels(labels) << ' ' << cumulative << '\n';
            }
        }
    }
}

std::string metrics_registry::prometheus_text() const {
    std::ostringstream s;
    write_prometheus(s);
    return s.str();
}

}  // namespace redcoord
