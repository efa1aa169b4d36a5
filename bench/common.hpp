#pragma once
// Shared by every bench_<part> program: runs the registered Google Benchmarks with their
// table on stderr, keeps each result, and prints the project's result lines on stdout:
//   ratio <name> <value>
//   value <name> <number> <unit>

#include <redcoord/core/endpoint.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/test_certificates.hpp>

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <ctime>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace redcoord::bench {

struct result {
    double items_per_second = 0;  // the "items_per_second" counter, when the benchmark sets it
    double real_ns_per_iter = 0;  // adjusted real time per iteration, ns
    double cpu_ns_per_iter = 0;   // adjusted CPU time per iteration, ns
    std::map<std::string, double> counters;
};

// Runs the benchmarks selected by argv (--benchmark_filter ...); returns results by name
// (the name as registered, without the "/real_time" etc. suffixes).
std::map<std::string, result> run_benchmarks(int argc, char** argv);

// One redis-server listening on a TLS port and a plaintext port, for the TLS-versus-plaintext
// comparisons (issue 18). One server, not two: with two, the comparison would mostly measure
// where the scheduler placed each process (a VM's idle-CPU wake-up costs more than TLS).
struct tls_and_plain {
    testing::test_certificates certs;
    std::unique_ptr<testing::local_server> server;
    endpoint tls;    // its TLS port, trusting the test CA
    endpoint plain;  // its plaintext port
};
std::unique_ptr<tls_and_plain> start_tls_and_plain();

void print_ratio(const std::string& name, double value);
void print_value(const std::string& name, double number, const std::string& unit);

// Percentile (0..100) of a sample, by nearest rank; 0 for an empty sample.
double percentile(std::vector<double> sample, double p);

// Time and calling-thread CPU spent by one side of an interleaved comparison.
struct side {
    double wall_ns = 0;
    double cpu_ns = 0;
    std::uint64_t calls = 0;
    [[nodiscard]] double per_second() const {
        return wall_ns > 0 ? static_cast<double>(calls) * 1e9 / wall_ns : 0.0;
    }
    [[nodiscard]] double cpu_ns_per_call() const {
        return calls ? cpu_ns / static_cast<double>(calls) : 0.0;
    }
};

double thread_cpu_ns();

// Each benchmark iteration runs `block` calls of `a`, then `block` calls of `b`, adding each
// block's wall and thread CPU time to its side. Loopback latency here drifts by a factor of
// several within seconds, so a reference measured in its own time slot says little about
// the library measured in another; alternating in short blocks gives both the same machine.
template <class A, class B>
void alternate(benchmark::State& st, A&& a, B&& b, side& sa, side& sb, int block = 16) {
    auto run = [&](auto& fn, side& s) {
        const auto w0 = std::chrono::steady_clock::now();
        const double c0 = thread_cpu_ns();
        for (int i = 0; i < block; ++i) fn();
        s.cpu_ns += thread_cpu_ns() - c0;
        s.wall_ns += static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                             std::chrono::steady_clock::now() - w0)
                                             .count());
        s.calls += static_cast<std::uint64_t>(block);
    };
    for (auto _ : st) {
        run(a, sa);
        run(b, sb);
    }
    st.SetItemsProcessed(st.iterations() * 2 * block);
}

}  // namespace redcoord::bench
