#include "common.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

namespace redcoord::bench {
namespace {

class capture_reporter : public benchmark::ConsoleReporter {
public:
    std::map<std::string, result> results;

    void ReportRuns(const std::vector<Run>& runs) override {
        ConsoleReporter::ReportRuns(runs);
        for (const auto& r : runs) {
            if (r.error_occurred || r.run_type != Run::RT_Iteration) continue;
            std::string name = r.run_name.function_name;
            if (!r.run_name.args.empty()) name += "/" + r.run_name.args;
            result res;
            res.real_ns_per_iter = r.GetAdjustedRealTime();
            res.cpu_ns_per_iter = r.GetAdjustedCPUTime();
            for (const auto& [k, c] : r.counters) res.counters[k] = c.value;
            if (auto it = r.counters.find("items_per_second"); it != r.counters.end())
                res.items_per_second = it->second.value;
            results[name] = res;
        }
    }
};

}  // namespace

std::map<std::string, result> run_benchmarks(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    capture_reporter rep;
    // The table goes to stderr so stdout holds only the result lines.
    rep.SetOutputStream(&std::cerr);
    rep.SetErrorStream(&std::cerr);
    benchmark::RunSpecifiedBenchmarks(&rep);
    benchmark::Shutdown();
    return rep.results;
}

double thread_cpu_ns() {
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

void print_ratio(const std::string& name, double value) {
    std::printf("ratio %s %.3f\n", name.c_str(), value);
    std::fflush(stdout);
}

void print_value(const std::string& name, double number, const std::string& unit) {
    std::printf("value %s %.3f %s\n", name.c_str(), number, unit.c_str());
    std::fflush(stdout);
}

double percentile(std::vector<double> sample, double p) {
    if (sample.empty()) return 0;
    std::sort(sample.begin(), sample.end());
    auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(sample.size())));
    rank = std::clamp<std::size_t>(rank, 1, sample.size());
    return sample[rank - 1];
}

std::unique_ptr<tls_and_plain> start_tls_and_plain() {
    auto out = std::make_unique<tls_and_plain>();
    testing::server_options o;
    o.tls = testing::test_server_tls(out->certs);
    const auto plain_port = testing::free_port();
    o.config.emplace_back("port", std::to_string(plain_port));  // after the TLS lines' "port 0"
    out->server = std::make_unique<testing::local_server>(o);
    out->tls = out->server->endpoint();
    out->plain = out->tls;
    out->plain.tls = {};
    out->plain.port = plain_port;
    return out;
}

}  // namespace redcoord::bench
