// Several clients sharing one rate limit (an API quota, a crawler's politeness budget) through
// a redcoord::rate_limiter: GCRA on the server's clock, so the clients' own clocks never
// matter. Each client asks far faster than the rate; those refused wait exactly the
// retry_after the server returned (acquire() with a wait), never polling. At the end the
// admitted count is checked against what the limit allows: burst + rate x elapsed.
//
//   rate_limit [--redis redis://host:port] [--clients 4] [--rate 50] [--burst 10] [--seconds 2]
//
// Without --redis it starts a local redis-server of its own.
#include <redcoord/limit/rate_limiter.hpp>
#include <redcoord/testing/server_or_url.hpp>

#include <CLI/CLI.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

int main(int argc, char** argv) {
    CLI::App app{"Clients sharing one Redis rate limit"};
    std::string url;
    int clients = 4, seconds = 2;
    double rate = 50;
    std::uint64_t burst = 10;
    app.add_option("--redis", url, "Redis URL (default: a local server started here)");
    app.add_option("--clients", clients, "Concurrent clients")->check(CLI::Range(1, 64));
    app.add_option("--rate", rate, "Requests per second")->check(CLI::Range(0.1, 100000.0));
    app.add_option("--burst", burst, "Requests an idle limit admits at once")
        ->check(CLI::Range(1, 100000));
    app.add_option("--seconds", seconds, "How long the clients ask")->check(CLI::Range(1, 600));
    CLI11_PARSE(app, argc, argv);

    try {
        const redcoord::testing::server_or_url redis(url);  // a local server without --redis
        const redcoord::endpoint& ep = redis.endpoint();
        const std::string name = "example:api-quota";
        {
            redcoord::connection_pool pool(ep);
            (void)pool.borrow()->command({"DEL", "redcoord:rate:{" + name + "}"});
        }

        std::atomic<long> admitted{0}, refused_waits{0};
        const auto start = clock_type::now();
        const auto end = start + std::chrono::seconds(seconds);
        auto client = [&] {
            redcoord::connection_pool pool(ep);  // as if each client were its own process
            redcoord::rate_limiter limit(pool, name, {.rate = rate, .burst = burst});
            while (clock_type::now() < end) {
                const auto left =
                    std::chrono::duration_cast<std::chrono::microseconds>(end - clock_type::now());
                const auto r = limit.acquire(1, left);
                if (r.allowed)
                    ++admitted;
                else
                    ++refused_waits;
            }
        };
        std::vector<std::thread> threads;
        for (int i = 0; i < clients; ++i) threads.emplace_back(client);
        for (auto& t : threads) t.join();

        const double elapsed = std::chrono::duration<double>(clock_type::now() - start).count();
        const double allowed_most = static_cast<double>(burst) + rate * elapsed;
        std::printf(
            "rate_limit: %ld admitted in %.2f s by %d clients; the limit allows %.0f "
            "(burst %llu + %.0f/s)\n",
            admitted.load(), elapsed, clients, allowed_most, static_cast<unsigned long long>(burst),
            rate);
        if (static_cast<double>(admitted.load()) > allowed_most + 1) {
            std::fprintf(stderr, "rate_limit: FAILED: more admitted than the limit allows\n");
            return 1;
        }
        std::printf("rate_limit: within the limit\n");
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "rate_limit: %s\n", e.what());
        return 1;
    }
}
