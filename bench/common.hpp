#pragma once
// Shared by every bench_<part> program: runs the registered Google Benchmarks with their
// table on stderr, keeps each result, and prints the project's result lines on stdout:
//   ratio <name> <value>
//   value <name> <number> <unit>

#include <map>
#include <string>
#include <vector>

namespace redcoord::bench {

struct result {
    double items_per_second = 0;   // the "items_per_second" counter, when the benchmark sets it
    double real_ns_per_iter = 0;   // adjusted real time per iteration, ns
    double cpu_ns_per_iter = 0;    // adjusted CPU time per iteration, ns
    std::map<std::string, double> counters;
};

// Runs the benchmarks selected by argv (--benchmark_filter ...); returns results by name
// (the name as registered, without the "/real_time" etc. suffixes).
std::map<std::string, result> run_benchmarks(int argc, char** argv);

void print_ratio(const std::string& name, double value);
void print_value(const std::string& name, double number, const std::string& unit);

// Percentile (0..100) of a sample, by nearest rank; 0 for an empty sample.
double percentile(std::vector<double> sample, double p);

}  // namespace redcoord::bench
