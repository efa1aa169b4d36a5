// One fair_lock client in its own process, for the order and fault tests of fair_lock:
//   fair_lock_child <port|url> <resource> <tag> <waiter_lease_ms> <hold_ms> <ttl_ms>
// lock()s `resource`, appends `tag` to the list `order:<resource>` (a plain key), holds for
// hold_ms, then releases and exits 0 (1 on an error, with the message on stderr).
#include <redcoord/core/endpoint.hpp>
#include <redcoord/lock/fair_lock.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

int main(int argc, char** argv) {
    if (argc != 7) {
        std::fprintf(stderr, "usage: %s port|url resource tag waiter_lease_ms hold_ms ttl_ms\n",
                     argv[0]);
        return 2;
    }
    try {
        using std::chrono::milliseconds;
        // A URL (with its TLS options when the test runs over TLS) or a port on 127.0.0.1.
        const std::string where = argv[1];
        redcoord::connection_pool pool(redcoord::parse_endpoint(
            where.find("://") != std::string::npos ? where : "redis://127.0.0.1:" + where));
        const std::string resource = argv[2];
        redcoord::fair_lock_options o;
        o.waiter_lease = milliseconds(std::stoll(argv[4]));
        o.timing.ttl = milliseconds(std::stoll(argv[6]));
        redcoord::fair_lock lock(pool, resource, o);
        lock.lock();
        (void)pool.command({"RPUSH", "order:" + resource, argv[3]});
        std::this_thread::sleep_for(milliseconds(std::stoll(argv[5])));
        (void)lock.release();
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fair_lock_child: %s\n", e.what());
        return 1;
    }
}
