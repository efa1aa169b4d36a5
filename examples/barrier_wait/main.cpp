// barrier_wait: processes meet at a reusable Redis-backed barrier, round after round.
//
//   example_barrier_wait                      # starts its own redis-server and 4 member processes
//   example_barrier_wait --redis redis://host:6379 --parties 3   # be one member; run it 3 times
//
// Each member does some "work" (a random sleep), then calls barrier::arrive_and_wait(); all of
// them leave the barrier together, and the barrier is ready for the next round at once.
#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/core/token.hpp>
#include <redcoord/signaling/barrier.hpp>
#include <redcoord/signaling/signal_hub.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/process.hpp>

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cstdio>
#include <thread>

using namespace std::chrono_literals;

namespace {

// One member: `rounds` times work, then wait for the others.
int member(const std::string& url, const std::string& name, std::size_t parties, int rounds,
           int timeout_ms) {
    redcoord::connection_pool pool(redcoord::parse_endpoint(url));
    redcoord::signal_hub hub(pool);  // pub/sub only wakes; the barrier's state is in keys
    redcoord::barrier b(hub, name, parties);
    for (int r = 0; r < rounds; ++r) {
        std::this_thread::sleep_for(
            std::chrono::milliseconds(redcoord::random_between(0, 50)));  // "work"
        try {
            auto gen = b.arrive_and_wait(std::chrono::milliseconds(timeout_ms));
            std::printf("member %d passed generation %llu\n", static_cast<int>(::getpid()),
                        static_cast<unsigned long long>(gen));
        } catch (const redcoord::barrier_timeout& e) {
            // e.g. "barrier 'demo' timed out: 2 of 3 parties arrived" — a member is missing.
            std::fprintf(stderr, "member %d: %s\n", static_cast<int>(::getpid()), e.what());
            return 1;
        }
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Processes meeting at a reusable Redis barrier"};
    std::vector<std::string> redis;
    std::string name = "barrier_wait";
    std::size_t parties = 4;
    int rounds = 3, timeout_ms = 10000;
    app.add_option("--redis", redis,
                   "Redis URL (redis://host:port); none: start a local server and the members");
    app.add_option("--name", name, "Barrier name");
    app.add_option("--parties", parties, "Members that must arrive before any passes")
        ->check(CLI::PositiveNumber);
    app.add_option("--rounds", rounds, "Rounds each member runs")->check(CLI::PositiveNumber);
    app.add_option("--timeout-ms", timeout_ms, "Longest wait at the barrier, milliseconds")
        ->check(CLI::PositiveNumber);
    CLI11_PARSE(app, argc, argv);

    try {
        if (!redis.empty()) return member(redis.front(), name, parties, rounds, timeout_ms);

        // Stand-alone: our own redis-server, and `parties` copies of this program as members.
        redcoord::testing::local_server server;
        std::vector<redcoord::testing::process> members;
        for (std::size_t i = 0; i < parties; ++i)
            members.emplace_back(std::vector<std::string>{
                "/proc/self/exe", "--redis", server.url(), "--name", name, "--parties",
                std::to_string(parties), "--rounds", std::to_string(rounds)});
        int failed = 0;
        for (auto& m : members) failed += m.wait() != 0;
        if (failed) {
            std::fprintf(stderr, "barrier_wait: %d member(s) failed\n", failed);
            return 1;
        }
        std::printf("barrier_wait: %zu members passed %d rounds\n", parties, rounds);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "barrier_wait: %s\n", e.what());
        return 1;
    }
}
