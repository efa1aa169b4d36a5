// The registry's series identity, validation, collectors and concurrent updates (run under
// TSan by ./scripts/test --tsan).
#include <redcoord/core/errors.hpp>
#include <redcoord/core/metrics.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace {

using redcoord::metric_desc;
using redcoord::metrics_registry;

TEST(MetricsRegistry, SameNameAndLabelsIsTheSameSeries) {
    metrics_registry r;
    const metric_desc d{"c_total", "", {}};
    auto a = r.counter(d, {{"name", "x"}});
    auto b = r.counter(d, {{"name", "x"}});
    auto other = r.counter(d, {{"name", "y"}});
    EXPECT_EQ(a.get(), b.get());
    EXPECT_NE(a.get(), other.get());
}

TEST(MetricsRegistry, RejectsInvalidNamesAndMismatches) {
    metrics_registry r;
    EXPECT_THROW(r.counter({"1bad", "", {}}, {}), redcoord::invalid_argument);
    EXPECT_THROW(r.counter({"ok_total", "", {}}, {{"bad-label", "v"}}), redcoord::invalid_argument);
    EXPECT_THROW(r.counter({"ok_total", "", {}}, {{"__reserved", "v"}}),
                 redcoord::invalid_argument);
    EXPECT_THROW(r.histogram({"h_seconds", "", {1}}, {{"le", "v"}}), redcoord::invalid_argument);
    EXPECT_THROW(r.histogram({"h2_seconds", "", {1, 0.5}}, {}), redcoord::invalid_argument);
    (void)r.counter({"ok_total", "", {}}, {{"a", "1"}});
    EXPECT_THROW(r.gauge({"ok_total", "", {}}, {{"a", "1"}}),
                 redcoord::invalid_argument);  // another type
    EXPECT_THROW(r.counter({"ok_total", "", {}}, {{"b", "1"}}),
                 redcoord::invalid_argument);  // other labels
}

TEST(MetricsRegistry, CountersNeverGoDown) {
    metrics_registry r;
    auto c = r.counter({"c_total", "", {}}, {});
    c->inc(2);
    c->inc(-5);
    EXPECT_EQ(r.prometheus_text(), "# TYPE c_total counter\nc_total 2\n");
}

TEST(MetricsRegistry, CollectorsRunAtEachWriteUntilTheirHandleGoes) {
    metrics_registry r;
    auto g = r.gauge({"q", "", {}}, {});
    int runs = 0;
    auto handle = r.add_collector([&] { g->set(++runs); });
    EXPECT_EQ(r.prometheus_text(), "# TYPE q gauge\nq 1\n");
    EXPECT_EQ(r.prometheus_text(), "# TYPE q gauge\nq 2\n");
    handle.reset();
    EXPECT_EQ(r.prometheus_text(), "# TYPE q gauge\nq 2\n");
    auto throwing = r.add_collector([] { throw std::runtime_error("down"); });
    EXPECT_NO_THROW((void)r.prometheus_text());
}

TEST(MetricsRegistry, HandlesOutliveTheRegistry) {
    std::shared_ptr<redcoord::metric_histogram> h;
    std::shared_ptr<void> collector;
    {
        metrics_registry r;
        h = r.histogram({"h_seconds", "", {0.1}}, {});
        collector = r.add_collector([] {});
    }
    h->observe(0.05);
    collector.reset();
}

// Updates from many threads while another scrapes: every update counted, and TSan clean.
TEST(MetricsRegistry, ConcurrentUpdatesAndScrapes) {
    metrics_registry r;
    constexpr int threads = 4, per = 20000;
    std::atomic<bool> done{false};
    std::thread scraper([&] {
        while (!done.load()) (void)r.prometheus_text();
    });
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t)
        ts.emplace_back([&, t] {
            auto c = r.counter({"c_total", "", {}}, {{"t", std::to_string(t % 2)}});
            auto g = r.gauge({"g", "", {}}, {});
            auto h = r.histogram({"h_seconds", "", {0.5}}, {});
            for (int i = 0; i < per; ++i) {
                c->inc();
                g->add(1);
                g->add(-1);
                h->observe(i % 2 ? 0.25 : 0.75);
            }
        });
    for (auto& t : ts) t.join();
    done = true;
    scraper.join();
    const auto text = r.prometheus_text();
    EXPECT_NE(text.find("c_total{t=\"0\"} " + std::to_string(2 * per) + "\n"), std::string::npos)
        << text;
    EXPECT_NE(text.find("c_total{t=\"1\"} " + std::to_string(2 * per) + "\n"), std::string::npos)
        << text;
    EXPECT_NE(text.find("\ng 0\n"), std::string::npos) << text;
    EXPECT_NE(text.find("h_seconds_bucket{le=\"0.5\"} " + std::to_string(threads * per / 2) + "\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("h_seconds_count " + std::to_string(threads * per) + "\n"),
              std::string::npos)
        << text;
}

}  // namespace
