// At most N workers at once in a section guarded by a redcoord::semaphore (a connection budget
// to a downstream service, a licence count): each worker is like its own process, with its
// own pool, and each permit is a lease, so a worker that dies gives its permit back after the
// TTL. Each acquisition's fencing token exceeds those of the permits released before it, so a
// downstream service can refuse a holder that was paused past its lease (docs/limit.md).
//
//   semaphore_pool [--redis redis://host:port] [--workers 8] [--permits 3] [--rounds 10]
//
// Without --redis it starts a local redis-server of its own.
#include <redcoord/limit/semaphore.hpp>
#include <redcoord/testing/server_or_url.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

int main(int argc, char** argv) {
    CLI::App app{"Workers sharing N permits of a Redis semaphore"};
    std::string url;
    int workers = 8, rounds = 10;
    std::uint64_t permits = 3;
    app.add_option("--redis", url, "Redis URL (default: a local server started here)");
    app.add_option("--workers", workers, "Concurrent workers")->check(CLI::Range(1, 64));
    app.add_option("--permits", permits, "Permits of the semaphore")->check(CLI::Range(1, 64));
    app.add_option("--rounds", rounds, "Sections per worker")->check(CLI::Range(1, 100000));
    CLI11_PARSE(app, argc, argv);

    try {
        const redcoord::testing::server_or_url redis(url);  // a local server without --redis
        const redcoord::endpoint& ep = redis.endpoint();

        std::atomic<int> inside{0}, most{0}, sections{0};
        // The largest token of a released permit: any permit acquired after that release
        // must carry a larger one (the fencing rule a downstream service relies on).
        std::atomic<std::uint64_t> released_max{0};
        std::atomic<bool> token_went_back{false};
        auto raise = [](std::atomic<std::uint64_t>& a, std::uint64_t v) {
            std::uint64_t cur = a.load();
            while (v > cur && !a.compare_exchange_weak(cur, v)) {}
        };
        auto worker = [&] {
            redcoord::connection_pool pool(ep);  // as if each worker were its own process
            redcoord::semaphore sem(pool, "example:downstream",
                                    {.permits = permits, .timing = {.ttl = 10s}, .watchdog = true});
            for (int r = 0; r < rounds; ++r) {
                const auto floor = released_max.load();
                auto p = sem.acquire();  // blocks, woken by pub/sub when a permit frees
                if (p.fencing_token() <= floor) token_went_back = true;
                const int now_inside = ++inside;
                int seen = most.load();
                while (now_inside > seen && !most.compare_exchange_weak(seen, now_inside)) {}
                std::this_thread::sleep_for(5ms);  // the guarded work
                --inside;
                ++sections;
                const auto token = p.fencing_token();
                (void)p.release();
                raise(released_max, token);
            }
        };
        std::vector<std::thread> threads;
        for (int i = 0; i < workers; ++i) threads.emplace_back(worker);
        for (auto& t : threads) t.join();

        std::printf("semaphore_pool: %d sections, at most %d at once (permits %llu)\n",
                    sections.load(), most.load(), static_cast<unsigned long long>(permits));
        if (most.load() > static_cast<int>(permits) || token_went_back) {
            std::fprintf(
                stderr, "semaphore_pool: FAILED: %s\n",
                token_went_back ? "a fencing token went back" : "more holders than permits");
            return 1;
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "semaphore_pool: %s\n", e.what());
        return 1;
    }
}
