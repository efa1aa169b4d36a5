// A critical section protected by Redlock over N independent Redis masters, with the
// protected resource checking fencing tokens (Redlock: the redis.io page "Distributed Locks with Redis";
// fencing: Martin Kleppmann, "How to do distributed locking"; see docs/references.md).
//
//   redlock_section [--redis redis://host:port ...] [--workers 3] [--rounds 20] [--ttl-ms 5000]
//
// Without --redis it starts three local redis-server masters of its own.
#include <redcoord/lock/redlock.hpp>
#include <redcoord/testing/local_server.hpp>

#include <CLI/CLI.hpp>

#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

namespace {

// The resource the lock protects. It remembers the highest fencing token it accepted and
// refuses writes carrying an older one: a holder that was paused past its TTL cannot
// corrupt it even though it still believes it holds the lock (Kleppmann).
class fenced_resource {
public:
    bool write(std::uint64_t fencing_token, int worker) {
        std::lock_guard l(mu_);
        if (fencing_token <= highest_) return false;  // stale holder: reject
        highest_ = fencing_token;
        ++writes_;
        last_writer_ = worker;
        return true;
    }
    int writes() {
        std::lock_guard l(mu_);
        return writes_;
    }

private:
    std::mutex mu_;
    std::uint64_t highest_ = 0;
    int writes_ = 0;
    int last_writer_ = -1;
};

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Redlock-protected critical section"};
    std::vector<std::string> urls;
    int workers = 3, rounds = 20, ttl_ms = 5000;
    app.add_option("--redis", urls, "Redis master URL, repeat for each of the N masters");
    app.add_option("--workers", workers, "Concurrent workers (threads, each its own connections)")
        ->check(CLI::Range(1, 64));
    app.add_option("--rounds", rounds, "Critical sections per worker")
        ->check(CLI::Range(1, 1000000));
    app.add_option("--ttl-ms", ttl_ms, "Lock TTL in milliseconds")->check(CLI::Range(10, 3600000));
    CLI11_PARSE(app, argc, argv);

    try {
        std::vector<std::unique_ptr<redcoord::testing::local_server>> own;
        std::vector<redcoord::endpoint> masters;
        if (urls.empty()) {
            own = redcoord::testing::start_masters(3);
            for (auto& s : own) masters.push_back(s->endpoint());
        } else {
            for (auto& u : urls) masters.push_back(redcoord::parse_endpoint(u));
        }

        fenced_resource resource;
        std::atomic<int> inside{0}, overlaps{0}, rejected{0};
        auto worker = [&](int id) {
            // Each worker is like its own process: its own pools and lock object.
            std::vector<std::unique_ptr<redcoord::connection_pool>> pools;
            std::vector<redcoord::connection_pool*> nodes;
            for (auto& ep : masters) {
                pools.push_back(std::make_unique<redcoord::connection_pool>(ep));
                nodes.push_back(pools.back().get());
            }
            redcoord::redlock lock(nodes, "example:section",
                                   {.timing = {.ttl = std::chrono::milliseconds(ttl_ms)}});
            for (int i = 0; i < rounds; ++i) {
                // Lockable: std::unique_lock blocks until a majority granted the lock and
                // releases on every node at scope exit (never throwing).
                std::unique_lock guard(lock);
                if (inside.fetch_add(1) != 0) ++overlaps;
                // Pass the fencing token with every write; the resource rejects stale ones.
                if (!resource.write(lock.fencing_token(), id)) ++rejected;
                std::this_thread::sleep_for(1ms);  // the work
                inside.fetch_sub(1);
            }
        };
        std::vector<std::thread> threads;
        for (int i = 0; i < workers; ++i) threads.emplace_back(worker, i);
        for (auto& t : threads) t.join();

        std::printf(
            "redlock_section: %d workers x %d rounds over %zu masters: %d writes, %d overlaps, %d "
            "rejected\n",
            workers, rounds, masters.size(), resource.writes(), overlaps.load(), rejected.load());
        const bool ok = overlaps == 0 && rejected == 0 && resource.writes() == workers * rounds;
        std::printf("redlock_section: %s\n", ok ? "ok" : "FAILED");
        return ok ? 0 : 1;
    } catch (const redcoord::error& e) {
        std::fprintf(stderr, "redlock_section: %s\n", e.what());
        return 1;
    }
}
