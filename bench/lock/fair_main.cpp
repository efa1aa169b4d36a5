// lock_fair_check: fair_lock's two figures on their own (a quick check; ./scripts/bench lock
// prints them next to the default lock's, from lock_bench.cpp).
//   lock_fair_check [seconds]
#include "contended.hpp"
#include "fair.hpp"

#include <redcoord/testing/local_server.hpp>

#include <algorithm>
#include <cstdio>
#include <string>

int main(int argc, char** argv) {
    const auto run = std::chrono::milliseconds(argc > 1 ? std::stoll(argv[1]) * 1000 : 10000);
    redcoord::testing::local_server server;
    auto p50 = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v.empty() ? 0.0 : v[v.size() / 2];
    };
    // Interleaved, so both meet the same machine.
    std::vector<double> fair, plain;
    for (int i = 0; i < 4; ++i) {
        auto f = lock_bench::fair_handoffs_us(server.port(), std::chrono::milliseconds(500));
        auto p = lock_bench::single_handoffs_us(server.port(), std::chrono::milliseconds(500));
        fair.insert(fair.end(), f.begin(), f.end());
        plain.insert(plain.end(), p.begin(), p.end());
    }
    std::printf("value fair_lock_handoff_p50_us %.1f\n", p50(fair));
    std::printf("value lock_handoff_p50_us %.1f\n", p50(plain));
    std::fflush(stdout);
    const auto c = lock_bench::fair_contended(server.port(), 4, run);
    std::fprintf(stderr, "fair contended: %.0f sections/s, counts", c.per_second());
    for (auto n : c.counts) std::fprintf(stderr, " %llu", static_cast<unsigned long long>(n));
    std::fprintf(stderr, "\n");
    std::printf("ratio fair_lock_min_share %.2f\n", c.min_share());
    return 0;
}
