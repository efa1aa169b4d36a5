// A candidate in its own process for the fault tests: campaigns with a leader_elector, runs a
// leader_task every 10 ms, and logs one line per event with the steady-clock time in ns
// (CLOCK_MONOTONIC, comparable across processes on one machine):
//   E <epoch> <ns>     elected          R <reason> <ns>   revoked
//   W <epoch> <ns>     leader work: the process was leader of <epoch> at <ns>
// Usage: election_child <port> <name> <identity> <term_ms> <seconds>

#include <redcoord/election/leader_task.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

namespace {
long long now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}
}  // namespace

int main(int argc, char** argv) {
    if (argc != 6) {
        std::fprintf(stderr,
                     "usage: election_child <port> <name> <identity> <term_ms> <seconds>\n");
        return 2;
    }
    redcoord::endpoint ep;
    ep.port = static_cast<std::uint16_t>(std::stoi(argv[1]));
    ep.command_timeout = std::chrono::milliseconds(500);
    redcoord::connection_pool pool(ep);
    redcoord::election_options o;
    o.identity = argv[3];
    o.term = std::chrono::milliseconds(std::stoi(argv[4]));
    redcoord::leader_elector e(pool, argv[2], o);
    const auto elected_slot = e.on_elected([](std::uint64_t ep) {
        std::printf("E %llu %lld\n", static_cast<unsigned long long>(ep), now_ns()),
            std::fflush(stdout);
    });
    const auto revoked_slot = e.on_revoked([](redcoord::revoke_reason r) {
        std::printf("R %s %lld\n", std::string(redcoord::to_string(r)).c_str(), now_ns());
        std::fflush(stdout);
    });
    redcoord::leader_task task(
        e, std::chrono::milliseconds(10), [&](std::uint64_t epoch, std::stop_token) {
            const long long t = now_ns();
            if (e.is_leader() && e.epoch() == epoch) {
                std::printf("W %llu %lld\n", static_cast<unsigned long long>(epoch), t);
                std::fflush(stdout);
            }
        });
    e.start();
    std::this_thread::sleep_for(std::chrono::seconds(std::stoi(argv[5])));
    task.stop();
    e.stop();
    return 0;
}
