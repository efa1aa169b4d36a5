// One Redlock client of a fault schedule, run in its own network namespace:
//   chaos_lock_client NAME LOG SECONDS TTL_MS RESOURCE_URL NODE_URL...
// Until SECONDS pass: acquire the lock "chaos" on the nodes, make one guarded write to the
// resource host with the fencing token, hold a little, release. Every holding and every write
// goes to LOG as a history line (testing/history.hpp), flushed at once, so a client killed or
// paused at any point leaves a readable history.
//
// CHAOS_MODE breaks the run on purpose, to show the checkers catch it:
//   overrun   the holder keeps working for 2 x TTL, ignoring its validity, and writes again
//             at the end (Kleppmann's paused holder): holdings overlap; fencing must reject
//             the late writes;
//   unfenced  as overrun, and the resource accepts every write (no fencing check).
// CHAOS_MODE=long is not broken: the holder works until 10% of the TTL before its validity
// ends (as long as it may), which is where a server whose clock runs fast shows.
//
// CHAOS_LOCK=single uses distributed_lock on the one NODE_URL (a redis-sentinel:// URL in the
// Sentinel schedules) with lock_options::replicas = CHAOS_REPLICAS, instead of redlock.
// CHAOS_LOCK=fair uses fair_lock on the first NODE_URL, its waiter lease equal to the TTL, so
// a waiter paused or cut off past it loses its place.
#include "chaos_common.hpp"

#include <redcoord/core/pool.hpp>
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/lock/fair_lock.hpp>
#include <redcoord/lock/redlock.hpp>
#include <redcoord/testing/history.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>

namespace h = redcoord::testing::history;
using namespace std::chrono;

// Until `until`: acquire, write through the fence, hold, release; each holding and write
// logged. `Lock` is redlock, distributed_lock or fair_lock (the same acquire/release shape).
template <class Lock>
void run_loop(Lock& lock, const std::string& name, chaos::history_log& log,
              redcoord::connection_pool& resource, milliseconds ttl,
              steady_clock::time_point until) {
    const std::string mode = std::getenv("CHAOS_MODE") ? std::getenv("CHAOS_MODE") : "";
    const bool overrun = mode == "overrun" || mode == "unfenced";
    const auto rule = mode == "unfenced" ? chaos::fence::none : chaos::fence::above;
    std::mt19937 rng(std::random_device{}());
    auto write = [&](const h::event& e) { log.write(e); };
    while (steady_clock::now() < until) {
        std::optional<redcoord::lock_acquisition> got;
        try {
            got = lock.acquire(milliseconds(200));
        } catch (const std::exception&) {
            std::this_thread::sleep_for(milliseconds(20));  // no majority reachable
            continue;
        }
        if (!got) continue;
        const std::int64_t held_from = h::monotonic_ns();
        auto guarded_write = [&] {
            h::event w{name, "write", h::monotonic_ns(), 0, false, got->fencing_token, 0, ""};
            chaos::guarded_write(resource, rule, w);
            w.end_ns = h::monotonic_ns();
            write(w);
        };
        guarded_write();
        if (overrun) {
            std::this_thread::sleep_for(2 * ttl);
            guarded_write();
        } else if (mode == "long") {
            std::this_thread::sleep_until(got->valid_until - ttl / 10);
        } else {
            std::this_thread::sleep_for(milliseconds(
                std::uniform_int_distribution<int>(0, static_cast<int>(ttl.count() / 4))(rng)));
        }
        const std::int64_t released_at = h::monotonic_ns();
        // The holding ends when the holder stops relying on it: at its release, or when its
        // validity ran out if that came first (a holder paused past its TTL).
        const std::int64_t until =
            overrun ? released_at : std::min(released_at, chaos::history_ns(got->valid_until));
        write({name, "hold", held_from, until, true, got->fencing_token, 0, ""});
        try {
            (void)lock.release();
        } catch (const std::exception&) {}
    }
}

int main(int argc, char** argv) {
    if (argc < 7) {
        std::fprintf(stderr, "usage: %s NAME LOG SECONDS TTL_MS RESOURCE_URL NODE_URL...\n",
                     argv[0]);
        return 2;
    }
    const std::string name = argv[1];
    chaos::history_log log(argv[2]);
    if (!log.open()) return 2;
    const auto until = steady_clock::now() + seconds(std::stoi(argv[3]));
    const milliseconds ttl(std::stoll(argv[4]));
    redcoord::connection_pool resource(chaos::quick_endpoint(argv[5]));
    std::vector<std::unique_ptr<redcoord::connection_pool>> nodes;
    std::vector<redcoord::connection_pool*> raw;
    for (int i = 6; i < argc; ++i) {
        nodes.push_back(
            std::make_unique<redcoord::connection_pool>(chaos::quick_endpoint(argv[i])));
        raw.push_back(nodes.back().get());
    }
    const std::string kind = std::getenv("CHAOS_LOCK") ? std::getenv("CHAOS_LOCK") : "";
    if (kind == "fair") {
        redcoord::fair_lock_options o;
        o.timing.ttl = ttl;
        o.waiter_lease = ttl;
        redcoord::fair_lock lock(*raw.front(), "chaos", o);
        run_loop(lock, name, log, resource, ttl, until);
    } else if (kind == "single") {
        redcoord::lock_options o;
        o.timing.ttl = ttl;
        if (const char* r = std::getenv("CHAOS_REPLICAS")) o.replication.replicas = std::stoul(r);
        redcoord::distributed_lock lock(*raw.front(), "chaos", o);
        run_loop(lock, name, log, resource, ttl, until);
    } else {
        redcoord::redlock_options o;
        o.timing.ttl = ttl;
        redcoord::redlock lock(raw, "chaos", o);
        run_loop(lock, name, log, resource, ttl, until);
    }
    return 0;
}
