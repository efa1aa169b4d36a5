// The exact text format 0.0.4 the registry writes: HELP/TYPE lines, escaping, label order,
// histogram buckets (cumulative, `le` inclusive, +Inf = _count), value formatting.
#include <redcoord/core/metrics.hpp>

#include <gtest/gtest.h>

#include <limits>

namespace {

using redcoord::metric_desc;
using redcoord::metrics_registry;

TEST(PrometheusText, CounterAndGaugeExactText) {
    metrics_registry r;
    auto c = r.counter({"redcoord_lock_lost_total", "Holdings lost.", {}},
                       {{"kind", "lock"}, {"name", "orders"}});
    c->inc();
    c->inc(2);
    auto g = r.gauge({"redcoord_election_leader", "1 while leading.", {}},
                     {{"name", "e"}, {"identity", "w-1"}});
    g->set(1);
    EXPECT_EQ(r.prometheus_text(),
              "# HELP redcoord_election_leader 1 while leading.\n"
              "# TYPE redcoord_election_leader gauge\n"
              "redcoord_election_leader{name=\"e\",identity=\"w-1\"} 1\n"
              "# HELP redcoord_lock_lost_total Holdings lost.\n"
              "# TYPE redcoord_lock_lost_total counter\n"
              "redcoord_lock_lost_total{kind=\"lock\",name=\"orders\"} 3\n");
}

TEST(PrometheusText, EscapesLabelValuesAndHelp) {
    metrics_registry r;
    r.counter({"x_total", "back\\slash\nnewline \"quotes\" stay", {}}, {{"name", "a\"b\\c\nd"}})
        ->inc();
    EXPECT_EQ(r.prometheus_text(),
              "# HELP x_total back\\\\slash\\nnewline \"quotes\" stay\n"
              "# TYPE x_total counter\n"
              "x_total{name=\"a\\\"b\\\\c\\nd\"} 1\n");
}

TEST(PrometheusText, HistogramBucketsAreCumulativeAndInclusive) {
    metrics_registry r;
    auto h = r.histogram({"op_seconds", "Op time.", {0.1, 1}}, {{"kind", "lock"}});
    h->observe(0.05);
    h->observe(0.1);  // on the bound: counted in le="0.1"
    h->observe(0.5);
    h->observe(7);
    EXPECT_EQ(r.prometheus_text(),
              "# HELP op_seconds Op time.\n"
              "# TYPE op_seconds histogram\n"
              "op_seconds_bucket{kind=\"lock\",le=\"0.1\"} 2\n"
              "op_seconds_bucket{kind=\"lock\",le=\"1\"} 3\n"
              "op_seconds_bucket{kind=\"lock\",le=\"+Inf\"} 4\n"
              "op_seconds_sum{kind=\"lock\"} 7.65\n"
              "op_seconds_count{kind=\"lock\"} 4\n");
}

TEST(PrometheusText, HistogramWithoutLabels) {
    metrics_registry r;
    r.histogram({"d_seconds", "", {0.5}}, {})->observe(0.25);
    EXPECT_EQ(r.prometheus_text(),
              "# TYPE d_seconds histogram\n"
              "d_seconds_bucket{le=\"0.5\"} 1\n"
              "d_seconds_bucket{le=\"+Inf\"} 1\n"
              "d_seconds_sum 0.25\n"
              "d_seconds_count 1\n");
}

TEST(PrometheusText, SeriesSortedByLabelValuesMetricsByName) {
    metrics_registry r;
    r.gauge({"b", "", {}}, {{"name", "z"}})->set(2);
    r.gauge({"b", "", {}}, {{"name", "a"}})->set(-1.5);
    r.gauge({"a", "", {}}, {})->set(0);
    EXPECT_EQ(r.prometheus_text(),
              "# TYPE a gauge\n"
              "a 0\n"
              "# TYPE b gauge\n"
              "b{name=\"a\"} -1.5\n"
              "b{name=\"z\"} 2\n");
}

TEST(PrometheusText, ValueFormatting) {
    EXPECT_EQ(redcoord::format_metric_value(3), "3");
    EXPECT_EQ(redcoord::format_metric_value(0.001), "0.001");
    EXPECT_EQ(redcoord::format_metric_value(0.0005), "0.0005");
    EXPECT_EQ(redcoord::format_metric_value(-1.5), "-1.5");
    EXPECT_EQ(redcoord::format_metric_value(1e20), "1e+20");
    EXPECT_EQ(redcoord::format_metric_value(1e-9), "1e-09");
    EXPECT_EQ(redcoord::format_metric_value(std::numeric_limits<double>::infinity()), "+Inf");
    EXPECT_EQ(redcoord::format_metric_value(-std::numeric_limits<double>::infinity()), "-Inf");
    EXPECT_EQ(redcoord::format_metric_value(std::numeric_limits<double>::quiet_NaN()), "NaN");
    EXPECT_EQ(redcoord::escape_label_value("plain"), "plain");
}

TEST(PrometheusText, ContentTypeIsVersion004) {
    EXPECT_EQ(metrics_registry::content_type, "text/plain; version=0.0.4; charset=utf-8");
}

}  // namespace
