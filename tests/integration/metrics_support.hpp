#pragma once
// Helpers of the metrics and log integration tests (issue 20): a runtime with a registry and a
// recording log sink installed, and reading one series' value from the registry's text.

#include <redcoord/core/log.hpp>
#include <redcoord/core/metrics.hpp>
#include <redcoord/core/runtime.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace metrics_test {

// One record as the sink saw it, fields copied.
struct record {
    redcoord::log_level level;
    std::string component, message;
    std::map<std::string, std::string> fields;
};

class recording_sink : public redcoord::log_sink {
public:
    void write(const redcoord::log_record& r) override {
        record out{r.level, std::string(r.component), std::string(r.message), {}};
        for (const auto& f : r.fields) out.fields[std::string(f.key)] = std::string(f.value);
        std::lock_guard l(mu_);
        records_.push_back(std::move(out));
    }
    // The records whose message is `message`.
    std::vector<record> with_message(const std::string& message) const {
        std::lock_guard l(mu_);
        std::vector<record> out;
        for (const auto& r : records_)
            if (r.message == message) out.push_back(r);
        return out;
    }

private:
    mutable std::mutex mu_;
    std::vector<record> records_;
};

// A fresh runtime with metrics and a log sink: the objects built on its pools report there.
struct observed_runtime {
    std::shared_ptr<redcoord::runtime> rt = redcoord::runtime::create();
    std::shared_ptr<redcoord::metrics_registry> registry =
        std::make_shared<redcoord::metrics_registry>();
    std::shared_ptr<recording_sink> sink = std::make_shared<recording_sink>();
    observed_runtime() {
        rt->set_metrics(registry);
        rt->set_log_sink(sink);
    }
    // The value of the series written as `series` (e.g. `redcoord_lock_lost_total{kind="lock",name="x"}`),
    // or nullopt when the scrape has no such line.
    std::optional<double> value(const std::string& series) const {
        std::istringstream in(registry->prometheus_text());
        for (std::string line; std::getline(in, line);)
            if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 &&
                line[series.size()] == ' ')
                return std::stod(line.substr(series.size() + 1));
        return std::nullopt;
    }
    double value_or_zero(const std::string& series) const { return value(series).value_or(0); }
};

// Polls `p` every 10 ms until it holds or `within` passes; its last answer.
template <class Pred>
bool eventually(Pred p, std::chrono::milliseconds within = std::chrono::seconds(10)) {
    const auto end = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < end) {
        if (p()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return p();
}

}  // namespace metrics_test
