// One process of the rw_lock's fault tests.
//   rw_lock_kill_child <url> <name> <ttl_ms> read|write <hold_ms> watchdog|plain
//     takes the hold, prints "held" and holds it for hold_ms (a watchdog extends meanwhile);
//     then exits 4 when the hold was lost and on_lost was called (a paused holder), else
//     SIGKILLs itself without releasing, as a crashed holder would.
//   rw_lock_kill_child <url> <name> <ttl_ms> wait-write 0 plain
//     waits for the exclusive hold (registering its intent) until killed.
#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/limit/rw_lock.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>

int main(int argc, char** argv) {
    if (argc != 7) {
        std::fprintf(stderr,
                     "usage: rw_lock_kill_child <url> <name> <ttl_ms> "
                     "read|write|wait-write <hold_ms> watchdog|plain\n");
        return 2;
    }
    redcoord::connection_pool pool(redcoord::parse_endpoint(argv[1]));
    redcoord::rw_lock_options o;
    o.timing.ttl = std::chrono::milliseconds(std::stoll(argv[3]));
    o.watchdog = std::string(argv[6]) == "watchdog";
    redcoord::rw_lock rw(pool, argv[2], o);
    std::atomic<bool> told{false};
    auto c = rw.on_lost([&](const std::string&) { told = true; });
    const std::string mode = argv[4];
    if (mode == "wait-write") {
        rw.lock();
        return 5;  // not expected: the test kills it while it waits
    }
    const bool got = mode == "read" ? rw.try_lock_shared_for(std::chrono::seconds(10))
                                    : rw.try_lock_for(std::chrono::seconds(10));
    if (!got) return 3;
    std::puts("held");
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::milliseconds(std::stoll(argv[5])));
    if (rw.lost()) {
        for (int i = 0; i < 200 && !told; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        return told ? 4 : 6;
    }
    std::raise(SIGKILL);
    return 7;
}
