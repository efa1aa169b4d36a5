// The runtime's log sink: nothing by default, records with their fields once installed, and
// a throwing sink never reaches the caller. Also the metrics backend's installation.
#include <redcoord/core/log.hpp>
#include <redcoord/core/runtime.hpp>

#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

namespace {

struct recording_sink : redcoord::log_sink {
    std::mutex mu;
    std::vector<std::string> lines;
    void write(const redcoord::log_record& r) override {
        std::lock_guard l(mu);
        lines.push_back(std::string(redcoord::to_string(r.level)) + " " + std::string(r.component) +
                        ": " + std::string(r.message) + redcoord::format_fields(r.fields));
    }
};

struct throwing_sink : redcoord::log_sink {
    void write(const redcoord::log_record&) override { throw std::runtime_error("disk full"); }
};

TEST(LogSink, NothingByDefaultThenRecordsWithFields) {
    auto rt = redcoord::runtime::create();
    EXPECT_EQ(rt->log(), nullptr);
    rt->emit(redcoord::log_level::warning, "lock", "lost", {{"resource", "orders"}});  // nowhere
    auto sink = std::make_shared<recording_sink>();
    rt->set_log_sink(sink);
    rt->emit(redcoord::log_level::warning, "lock", "lock lost",
             {{"resource", "orders"}, {"reason", "extend failed"}});
    ASSERT_EQ(sink->lines.size(), 1u);
    EXPECT_EQ(sink->lines[0], "warning lock: lock lost resource=orders reason=\"extend failed\"");
    rt->set_log_sink(nullptr);
    rt->emit(redcoord::log_level::info, "lock", "again");
    EXPECT_EQ(sink->lines.size(), 1u);
}

TEST(LogSink, AThrowingSinkIsIgnored) {
    auto rt = redcoord::runtime::create();
    rt->set_log_sink(std::make_shared<throwing_sink>());
    EXPECT_NO_THROW(rt->emit(redcoord::log_level::error, "pool", "x"));
}

TEST(LogSink, LevelNames) {
    EXPECT_EQ(redcoord::to_string(redcoord::log_level::debug), "debug");
    EXPECT_EQ(redcoord::to_string(redcoord::log_level::info), "info");
    EXPECT_EQ(redcoord::to_string(redcoord::log_level::warning), "warning");
    EXPECT_EQ(redcoord::to_string(redcoord::log_level::error), "error");
}

TEST(MetricsInstall, OffByDefaultAndInstallable) {
    auto rt = redcoord::runtime::create();
    EXPECT_EQ(rt->metrics(), nullptr);
    auto reg = std::make_shared<redcoord::metrics_registry>();
    redcoord::metrics_options o;
    o.resource_names = false;
    rt->set_metrics(reg, o);
    EXPECT_EQ(rt->metrics(), reg);
    EXPECT_FALSE(rt->metrics_settings().resource_names);
}

}  // namespace
