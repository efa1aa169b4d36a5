// One process of the semaphore's SIGKILL tests: takes n permits (with the watchdog on or
// off), holds them for `hold_ms` (the watchdog extends meanwhile), then SIGKILLs itself
// without releasing, as a crashed holder would.
//   semaphore_kill_child <url> <name> <permits> <ttl_ms> <n> <hold_ms> watchdog|plain
#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/limit/semaphore.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>

int main(int argc, char** argv) {
    if (argc != 8) {
        std::fprintf(stderr,
                     "usage: semaphore_kill_child <url> <name> <permits> <ttl_ms> <n> "
                     "<hold_ms> watchdog|plain\n");
        return 2;
    }
    redcoord::connection_pool pool(redcoord::parse_endpoint(argv[1]));
    redcoord::semaphore_options o;
    o.permits = std::stoull(argv[3]);
    o.timing.ttl = std::chrono::milliseconds(std::stoll(argv[4]));
    o.watchdog = std::string(argv[7]) == "watchdog";
    redcoord::semaphore sem(pool, argv[2], o);
    auto p = sem.try_acquire_for(std::stoull(argv[5]), std::chrono::seconds(10));
    if (!p) return 3;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::stoll(argv[6])));
    if (p->lost()) return 4;  // the watchdog did not keep it
    std::raise(SIGKILL);
    return 5;
}
