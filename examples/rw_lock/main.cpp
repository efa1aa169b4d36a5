// rw_lock: readers share a "document", writers change it alone, through the standard guards.
//
//   example_rw_lock                             # starts its own redis-server
//   example_rw_lock --redis redis://host:6379   # use a running server
//
// Each reader and writer is a thread with its own rw_lock object on one name, as separate
// processes would be. A writer writes the document in two steps (a torn state in between); a
// reader that saw the torn state, or a writer that saw anyone else inside, would mean the lock
// let a writer overlap. A writer waiting is not starved by the readers: its intent stops new
// readers until it has had its turn.
#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/limit/rw_lock.hpp>
#include <redcoord/testing/local_server.hpp>

#include <CLI/CLI.hpp>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

namespace {

struct document {
    std::atomic<int> first{0}, second{0};  // equal except while a writer is inside
    std::atomic<int> inside{0};            // threads holding the lock here
    std::atomic<int> reads{0}, writes{0}, overlaps{0};
};

void reader(redcoord::connection_pool& pool, const std::string& name, int rounds, document& d) {
    redcoord::rw_lock rw(pool, name, {.timing = {.ttl = 10s}});
    for (int i = 0; i < rounds; ++i) {
        std::shared_lock<redcoord::rw_lock> l(rw);
        ++d.inside;
        if (d.first.load() != d.second.load()) ++d.overlaps;  // a torn write
        std::this_thread::sleep_for(2ms);
        --d.inside;
        ++d.reads;
    }
}

void writer(redcoord::connection_pool& pool, const std::string& name, int rounds, document& d) {
    redcoord::rw_lock rw(pool, name, {.timing = {.ttl = 10s}});
    for (int i = 0; i < rounds; ++i) {
        std::unique_lock<redcoord::rw_lock> l(rw);
        if (d.inside.fetch_add(1) != 0) ++d.overlaps;
        ++d.first;
        std::this_thread::sleep_for(2ms);  // the torn state a reader must never see
        ++d.second;
        --d.inside;
        ++d.writes;
    }
}

int run(const std::string& url, const std::string& name, int readers, int writers, int rounds) {
    redcoord::connection_pool pool(redcoord::parse_endpoint(url));
    document d;
    std::vector<std::thread> ts;
    for (int i = 0; i < readers; ++i) ts.emplace_back([&] { reader(pool, name, rounds, d); });
    for (int i = 0; i < writers; ++i) ts.emplace_back([&] { writer(pool, name, rounds, d); });
    for (auto& t : ts) t.join();
    if (d.overlaps.load() != 0) {
        std::fprintf(stderr, "rw_lock: %d overlaps with a writer\n", d.overlaps.load());
        return 1;
    }
    std::printf("rw_lock: %d reads and %d writes, no writer overlapped\n", d.reads.load(),
                d.writes.load());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Readers share a document, writers change it alone (redcoord::rw_lock)."};
    std::string redis, name = "example-document";
    int readers = 4, writers = 2, rounds = 10;
    app.add_option("--redis", redis, "Redis URL (default: start a private redis-server)");
    app.add_option("--name", name, "Lock name");
    app.add_option("--readers", readers, "Reader threads")->check(CLI::PositiveNumber);
    app.add_option("--writers", writers, "Writer threads")->check(CLI::PositiveNumber);
    app.add_option("--rounds", rounds, "Holds per thread")->check(CLI::PositiveNumber);
    CLI11_PARSE(app, argc, argv);
    try {
        if (!redis.empty()) return run(redis, name, readers, writers, rounds);
        redcoord::testing::local_server server;
        return run(server.url(), name, readers, writers, rounds);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "rw_lock: %s\n", e.what());
        return 1;
    }
}
