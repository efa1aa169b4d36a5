// One fresh process of issue 23's scenario:
//   lock_fault_child <run> <seconds> <checker_port> <node_port>...
// Loops lock() / critical section / unlock() on one redlock (ttl 2 s, defaults otherwise:
// 50 ms node_timeout, default endpoints) for <seconds>, and at least once. Reports to the
// checker server, under keys starting with <run>:, every exception out of lock()
// (`exceptions`, `errors`), every lock() call as "<start steady ns> <duration us>" (`lat`),
// overlapping sections (`overlaps`), a read-modify-write counter (`counter`) and how many
// sections ran (`sections`).
#include "checker_scripts.hpp"

#include <redcoord/core/endpoint.hpp>
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
using clock_type = std::chrono::steady_clock;

int main(int argc, char** argv) {
    if (argc < 5) {
        std::fprintf(stderr, "usage: %s run seconds checker_port node_port...\n", argv[0]);
        return 2;
    }
    try {
        const std::string run = argv[1];
        const auto seconds = std::chrono::duration<double>(std::stod(argv[2]));
        auto k = [&](const char* name) { return run + ":" + name; };
        connection_pool checker(parse_endpoint(std::string("redis://127.0.0.1:") + argv[3]));
        std::vector<std::unique_ptr<connection_pool>> pools;
        std::vector<connection_pool*> nodes;
        for (int i = 4; i < argc; ++i) {
            pools.push_back(std::make_unique<connection_pool>(
                parse_endpoint(std::string("redis://127.0.0.1:") + argv[i])));
            nodes.push_back(pools.back().get());
        }
        redlock lock(nodes, "fault-" + run, {.timing = {.ttl = 2000ms}});
        const std::string me = std::to_string(::getpid());
        const auto end = clock_type::now() + seconds;
        long sections = 0;
        while (clock_type::now() < end || sections == 0) {
            const auto t0 = clock_type::now();
            try {
                lock.lock();
            } catch (const std::exception& e) {
                checker.command({"INCR", k("exceptions")});
                checker.command({"RPUSH", k("errors"), e.what()});
                std::this_thread::sleep_for(10ms);
                continue;
            }
            const auto took =
                std::chrono::duration_cast<std::chrono::microseconds>(clock_type::now() - t0);
            checker.command({"RPUSH", k("lat"),
                             std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                t0.time_since_epoch())
                                                .count()) +
                                 " " + std::to_string(took.count())});
            const std::string id = me + ":" + std::to_string(sections);
            lock_test::enter.run(checker,
                                 {k("owner"), k("last"), k("overlaps"), k("stale"), k("entries")},
                                 {id, std::to_string(lock.fencing_token())});
            auto v = checker.command({"GET", k("counter")}).maybe_text();
            checker.command({"SET", k("counter"), std::to_string(v ? std::stoll(*v) + 1 : 1)});
            lock_test::leave.run(checker, {k("owner"), k("overlaps")}, {id});
            lock.unlock();
            ++sections;
        }
        checker.command({"INCRBY", k("sections"), std::to_string(sections)});
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fault child: %s\n", e.what());
        return 1;
    }
}
