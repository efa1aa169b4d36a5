// One limiter client of a fault schedule, run in its own network namespace:
//   chaos_limit_client semaphore|rwlock|rate NAME LOG SECONDS TTL_MS SERVER_URL
// Until SECONDS pass, on the name "chaos":
//   semaphore  acquire 1 or 2 of limit_permits permits, hold a little, release;
//   rwlock     take a share (two times in three) or the exclusive hold, hold a little, release;
//   rate       ask the rate limiter for one unit every few milliseconds (about ten times its
//              rate between three clients).
// A holding is logged as `hold` the moment it is granted, ending where its validity ends, and a
// `release` when its holder stops relying on it: a client killed or paused at any point leaves
// its whole lease in the history (testing/history.hpp). Requests are logged as `request`.
//
// CHAOS_MODE breaks the run on purpose, to show the checkers catch it:
//   overrun       holders keep working for 2 x TTL, ignoring their validity;
// CHAOS_MODE=long is not broken: holders keep their holding until 10% of the TTL before their
// validity ends, so a client killed at a random moment most likely dies holding.
//   fixed-window  the rate client counts in a window keyed by its own wall-clock second
//                 instead of the rate limiter (INCR on `chaos-fw:<second>`, allowed while the
//                 count is within the rate).
#include "chaos_common.hpp"
#include "limit_schedule.hpp"

#include <redcoord/core/pool.hpp>
#include <redcoord/limit/rate_limiter.hpp>
#include <redcoord/limit/rw_lock.hpp>
#include <redcoord/limit/semaphore.hpp>
#include <redcoord/testing/history.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <thread>

namespace h = redcoord::testing::history;
using namespace std::chrono;

namespace {

struct client {
    std::string name;
    chaos::history_log& log;
    milliseconds ttl;
    steady_clock::time_point until;
    bool overrun = false;
    bool long_holds = false;  // CHAOS_MODE=long
    std::mt19937 rng{std::random_device{}()};

    // One holding granted now with `token` (`what`: permits or "read"/"write"), valid until
    // `valid`: logged at once, held a while, logged released, then given back by `release`.
    void hold(std::uint64_t token, const std::string& what, steady_clock::time_point valid,
              const std::function<void()>& release) {
        const std::int64_t from = h::monotonic_ns();
        const auto lease_end = overrun ? steady_clock::now() + 2 * ttl : valid;
        log.write({name, "hold", from, chaos::history_ns(lease_end), true, token, 0, what});
        if (overrun)
            std::this_thread::sleep_for(2 * ttl);
        else if (long_holds)
            std::this_thread::sleep_until(valid - ttl / 10);
        else
            std::this_thread::sleep_for(milliseconds(
                std::uniform_int_distribution<int>(0, static_cast<int>(ttl.count() / 2))(rng)));
        const std::int64_t done = h::monotonic_ns();
        log.write({name, "release", done, done, true, token, 0, ""});
        try {
            release();
        } catch (const std::exception&) {}  // the lease ends by its TTL
    }

    // Runs `attempt` until the end; an attempt that threw (server away) is retried 20 ms later.
    void loop(const std::function<void()>& attempt) const {
        while (steady_clock::now() < until) {
            try {
                attempt();
            } catch (const std::exception&) {
                std::this_thread::sleep_for(milliseconds(20));
            }
        }
    }
};

void run_semaphore(client& c, redcoord::connection_pool& pool) {
    redcoord::semaphore_options o;
    o.permits = chaos::limit_permits;
    o.timing.ttl = c.ttl;
    o.label = c.name;
    redcoord::semaphore sem(pool, "chaos", o);
    c.loop([&] {
        const std::uint64_t n = std::uniform_int_distribution<std::uint64_t>(1, 2)(c.rng);
        auto p = sem.try_acquire_for(n, milliseconds(200));
        if (!p) return;
        c.hold(p->fencing_token(), std::to_string(n), p->valid_until(), [&] { p->release(); });
    });
}

void run_rw_lock(client& c, redcoord::connection_pool& pool) {
    redcoord::rw_lock_options o;
    o.timing.ttl = c.ttl;
    o.label = c.name;
    redcoord::rw_lock rw(pool, "chaos", o);
    c.loop([&] {
        if (std::uniform_int_distribution<int>(0, 2)(c.rng) == 0) {
            if (!rw.try_lock_for(milliseconds(200))) return;
            c.hold(rw.fencing_token(), "write", rw.valid_until(), [&] { rw.unlock(); });
        } else {
            if (!rw.try_lock_shared_for(milliseconds(200))) return;
            c.hold(rw.shared_fencing_token(), "read", rw.valid_until(),
                   [&] { rw.unlock_shared(); });
        }
    });
}

void run_rate(client& c, redcoord::connection_pool& pool, bool fixed_window) {
    redcoord::rate_limiter_options o;
    o.rate = chaos::limit_rate;
    o.burst = chaos::limit_burst;
    redcoord::rate_limiter limiter(pool, "chaos", o);
    c.loop([&] {
        h::event e{c.name, "request", h::monotonic_ns(), 0, false, 1, 0, ""};
        try {
            if (fixed_window) {
                // The wall clock, which the schedule skews: each skew its own window.
                const auto second =
                    duration_cast<seconds>(system_clock::now().time_since_epoch()).count();
                const auto key = "chaos-fw:" + std::to_string(second);
                const auto count = pool.command({"INCR", key}).integer();
                (void)pool.command({"PEXPIRE", key, "2000"});
                e.ok = static_cast<double>(count) <= chaos::limit_rate;
            } else {
                e.ok = limiter.try_acquire(1).allowed;
            }
        } catch (const std::exception&) {
            e.op = "request-unknown";  // the decision is unknown: not judged
        }
        e.end_ns = h::monotonic_ns();
        c.log.write(e);
        std::this_thread::sleep_for(milliseconds(std::uniform_int_distribution<int>(2, 28)(c.rng)));
    });
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 7) {
        std::fprintf(stderr, "usage: %s semaphore|rwlock|rate NAME LOG SECONDS TTL_MS SERVER_URL\n",
                     argv[0]);
        return 2;
    }
    const std::string kind = argv[1];
    chaos::history_log log(argv[3]);
    if (!log.open()) return 2;
    const std::string mode = std::getenv("CHAOS_MODE") ? std::getenv("CHAOS_MODE") : "";
    client c{argv[2],
             log,
             milliseconds(std::stoll(argv[5])),
             steady_clock::now() + seconds(std::stoi(argv[4])),
             mode == "overrun",
             mode == "long"};
    redcoord::connection_pool pool(chaos::quick_endpoint(argv[6]));
    if (kind == "semaphore")
        run_semaphore(c, pool);
    else if (kind == "rwlock")
        run_rw_lock(c, pool);
    else if (kind == "rate")
        run_rate(c, pool, mode == "fixed-window");
    else
        return 2;
    return 0;
}
