// One contender of the mutual-exclusion stress test:
//   lock_stress_child redlock|single <rounds> <checker_port> <node_port>...
// Each critical section reports (id, fencing token) to a checker server, which counts
// overlapping sections and tokens that do not increase, as a fenced resource would see them.
#include "checker_scripts.hpp"

#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/lock/redlock.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using namespace redcoord;

namespace {
using lock_test::enter;
using lock_test::leave;

endpoint local(int port) {
    endpoint e;
    e.port = static_cast<std::uint16_t>(port);
    e.connect_timeout = 100ms;
    e.command_timeout = 1000ms;
    return e;
}

template <class Lock>
int run(Lock& lock, int rounds, connection_pool& checker) {
    const std::string me = std::to_string(::getpid());
    for (int i = 0; i < rounds; ++i) {
        for (;;) {
            try {
                lock.lock();
                break;
            } catch (const quorum_unreachable&) {
                std::this_thread::sleep_for(10ms);  // a majority down: not expected here, retry
            }
        }
        const std::string id = me + ":" + std::to_string(i);
        const std::string token = std::to_string(lock.fencing_token());
        enter.run(checker, {"owner", "last", "overlaps", "stale", "entries"}, {id, token});
        std::this_thread::sleep_for(100us);  // the "work": widens any overlap window
        leave.run(checker, {"owner", "overlaps"}, {id});
        if (lock.lost()) checker.command({"INCR", "lost"});
        lock.unlock();
    }
    return 0;
}
}  // namespace

int main(int argc, char** argv) {
    if (argc < 5) {
        std::fprintf(stderr, "usage: %s redlock|single rounds checker_port node_port...\n",
                     argv[0]);
        return 2;
    }
    try {
        const std::string mode = argv[1];
        const int rounds = std::stoi(argv[2]);
        connection_pool checker(local(std::stoi(argv[3])));
        std::vector<std::unique_ptr<connection_pool>> pools;
        std::vector<connection_pool*> nodes;
        for (int i = 4; i < argc; ++i) {
            pools.push_back(std::make_unique<connection_pool>(local(std::stoi(argv[i]))));
            nodes.push_back(pools.back().get());
        }
        if (mode == "redlock") {
            // TTL 1 s: the test keeps a killed master down for longer (delayed restart).
            redlock lock(nodes, "stress", {.timing = {.ttl = 1000ms}, .node_timeout = 50ms});
            return run(lock, rounds, checker);
        }
        distributed_lock lock(*nodes.at(0), "stress", {.timing = {.ttl = 1000ms}});
        return run(lock, rounds, checker);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "stress child: %s\n", e.what());
        return 1;
    }
}
