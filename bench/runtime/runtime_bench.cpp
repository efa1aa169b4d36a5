// bench_runtime: what a process pays per waiting lock object, with the runtime shared.
//   value waiters1000_threads                 extra threads, 1,000 distributed_lock waiters (callers not counted)
//   value waiters1000_connections             extra server connections for the same
//   value waiters1000_rss_kib_per_waiter      resident memory per waiting lock object
//   value redlock5_waiters1000_threads        the same three for redlock over 5 masters
//   value redlock5_waiters1000_connections_per_node
//   value redlock5_waiters1000_rss_kib_per_waiter
//   value wake_after_release_p50_us           1,000 waiters on 1,000 resources: release one, until its waiter holds it
//   value lock_handoff_p50_us                 the same with a single waiter, this run
//   ratio wake_after_release_vs_handoff       the first over the second (goal <= 1.5)
//   value isolation_extension_gap_max_ms      100 watchdog locks (ttl 1 s) on a healthy server
//                                             for 30 s, while three paused servers' objects
//                                             (queue consumer, job worker, elector with a
//                                             replica) and two 5 s on_lost slots share the
//                                             runtime: the largest gap between extensions
//   value isolation_locks_lost                healthy locks lost in that run (goal 0)
//   value isolation_tick_workers              the runtime's tick workers at its end
//   value async_waiters10000_threads          extra threads, 10,000 async_acquire waiters on
//                                             10,000 held locks, started from one thread,
//                                             once the start-up burst's extra tick workers ended
//   value async_waiters10000_threads_peak     the same right after the subscriptions
//   value async_waiters10000_connections      extra server connections for the same
//   value async_waiters10000_rss_kib_per_waiter
//   value async_wake_after_release_p50_us     a release until its async waiter holds the lock
//   ratio async_wake_vs_handoff               the above over lock_handoff_p50_us (goal <= 1.5)
//   ratio pipelined_lock_vs_raw_pipelined     64 coroutines looping async_acquire + async_release
//                                             through one runtime, over a raw hiredis client
//                                             pipelining the same EVALSHA scripts (the very
//                                             commands, read from MONITOR) 64 deep on one
//                                             connection (goal >= 0.7)
//   ratio pipelined_lock_vs_raw_setnx         the same loops over a raw client pipelining bare
//                                             SET NX PX and the compare-and-delete: what the
//                                             fencing token and release notice cost on top
//   ratio pipelined_lock_tls_vs_plain         the same 64 loops against a server on a TLS port,
//                                             over a plaintext one: what TLS costs that path
// Each waiter is a thread blocked in acquire() on a resource that a holder (created before
// the baseline) holds. The baseline is taken with the 1,000 caller threads already started,
// warmed by one uncontended lock and release each, and parked, so their own stacks and
// malloc caches are not charged to the lock objects.
#include "async_bench.hpp"
#include "common.hpp"
#include "isolation_scenario.hpp"
#include "process_stats.hpp"

#include <redcoord/core/pool.hpp>
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/lock/redlock.hpp>
#include <redcoord/testing/local_server.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
using redcoord::testing::local_server;
using runtime_bench::added_threads;
using runtime_bench::channels;
using runtime_bench::clients;
using runtime_bench::heap_kib;
using runtime_bench::rss_kib;
using runtime_bench::thread_names;
using runtime_bench::threads_now;

namespace {

// REDCOORD_BENCH_WAITERS overrides the count (the names keep "1000"); e.g. a smaller run on a
// build whose waiters cost a thread each.
int waiters = 1000;

// A lock of either kind, as the bench uses it.
struct lockish {
    std::function<bool(std::chrono::milliseconds)> acquire;
    std::function<void()> release;
};

// The TTL of the waiters' phases' locks: far beyond the phase's length (set-up and waiting
// took up to 72 s here with 1,000 threads starting on a busy 2-core machine), so no holder's
// key expires before the bench releases it; measure() reports when that went wrong anyway.
constexpr auto waiters_ttl = std::chrono::milliseconds(std::chrono::minutes(10));

// The errors of a phase, by message: how many waiters or holders ended with each.
class error_tally {
public:
    void add(const std::string& what) {
        std::lock_guard l(mu_);
        ++by_what_[what];
    }
    void print(const char* who) const {
        std::lock_guard l(mu_);
        for (const auto& [what, count] : by_what_)
            std::fprintf(stderr, "  %d %s ended with: %s\n", count, who, what.c_str());
    }

private:
    mutable std::mutex mu_;
    std::map<std::string, int> by_what_;
};

struct figures {
    long threads = 0;
    long long connections = 0;  // the largest increase over the nodes
    double rss_kib_per_waiter = 0;
    double wake_p50_us = 0;
};

// Holders take every resource, callers park, baseline; then each caller makes its own lock
// object and blocks in acquire(); figures; then the holders release one by one, each timed
// until its waiter holds.
figures measure(const std::vector<local_server*>& nodes,
                const std::function<lockish(int)>& make_holder,
                const std::function<lockish(int)>& make_waiter, int wakes) {
    std::vector<lockish> holders;
    const auto held_since = clock_type::now();
    for (int i = 0; i < waiters; ++i) {
        holders.push_back(make_holder(i));
        if (!holders.back().acquire(0ms))
            throw std::runtime_error("holder could not take its resource");
    }
    std::mutex mu;
    std::condition_variable cv;
    bool go = false;
    // When each waiter held its lock (0: not yet), and whether its acquire() has returned.
    std::vector<std::atomic<std::int64_t>> held_at(waiters);
    std::vector<std::atomic<bool>> ended(waiters);
    for (int i = 0; i < waiters; ++i) held_at[i] = 0, ended[i] = false;
    error_tally waiter_errors, holder_errors;
    // Connections are counted from before the warm-up: the waiters' pools and pub/sub links
    // are part of what waiting costs.
    std::vector<long long> c0;
    for (auto* n : nodes) c0.push_back(clients(*n));
    std::atomic<int> parked{0};
    std::vector<std::thread> callers;
    for (int i = 0; i < waiters; ++i) {
        callers.emplace_back([&, i] {
            // A caller thread's own costs (its stack's depth, malloc's per-thread cache) are
            // the thread's, not the lock object's: one uncontended lock and release on a
            // resource nobody holds, before the baseline, puts them in the baseline.
            try {
                auto warm = make_waiter(waiters + i);
                if (warm.acquire(10s)) warm.release();
            } catch (const std::exception&) {}
            ++parked;
            {
                std::unique_lock l(mu);
                cv.wait(l, [&] { return go; });
            }
            auto lock = make_waiter(i);
            try {
                if (lock.acquire(120s)) {
                    held_at[i] = clock_type::now().time_since_epoch().count();
                    lock.release();
                }
            } catch (const std::exception& e) {
                // Reported, not fatal: a figure from a run with errors is marked as such.
                waiter_errors.add(e.what());
            }
            ended[i] = true;
        });
    }
    // Every caller warmed and parked, and the warm-up's transient threads (a pool's
    // background dial) gone: the thread count holds still for half a second.
    while (parked.load() < waiters) std::this_thread::sleep_for(10ms);
    for (long last = -1, now = threads_now(); now != last; now = threads_now()) {
        last = now;
        std::this_thread::sleep_for(500ms);
    }
    const long t0 = threads_now();
    const auto names0 = thread_names();
    const double r0 = rss_kib();
    const double h0 = heap_kib();
    {
        std::lock_guard l(mu);
        go = true;
    }
    cv.notify_all();
    // Ready when every waiter listens for its release and the burst of first attempts is over.
    // A waiter listens on one channel on each node of a majority (a Redlock object's random
    // majority: lock_transport.cpp), so the nodes hold waiters x majority channels in all.
    const auto listening = [&] {
        long long n = 0;
        for (auto* node : nodes) n += channels(*node);
        return n;
    };
    const long long expected =
        static_cast<long long>(waiters) * static_cast<long long>(nodes.size() / 2 + 1);
    const auto went = clock_type::now();
    const auto until = went + 60s;
    while (listening() < expected && clock_type::now() < until) std::this_thread::sleep_for(20ms);
    std::fprintf(stderr, "  %lld of %lld release channels listened to after %.1f s\n", listening(),
                 expected, std::chrono::duration<double>(clock_type::now() - went).count());
    std::this_thread::sleep_for(1s);
    // The burst's extra workers (a tick worker or a pool's dial that joined in while 1,000
    // first attempts were under way) end after 2 s without work: the threads the waiting
    // needs are those left once the count holds still for 2.5 s (at most 20 s).
    const long peak = threads_now() - t0;
    const auto names_peak = thread_names();
    const auto settle_by = clock_type::now() + 20s;
    for (long last = -1, now = threads_now(); now != last && clock_type::now() < settle_by;
         now = threads_now()) {
        last = now;
        std::this_thread::sleep_for(2500ms);
    }
    figures f;
    f.threads = threads_now() - t0;
    std::fprintf(stderr, "  threads: %ld right after the burst (%s), %ld once settled (%s)\n", peak,
                 added_threads(names0, names_peak).c_str(), f.threads,
                 added_threads(names0, thread_names()).c_str());
    f.rss_kib_per_waiter = (rss_kib() - r0) / waiters;
    const double heap_per_waiter = (heap_kib() - h0) / waiters;
    for (std::size_t k = 0; k < nodes.size(); ++k)
        f.connections = std::max(f.connections, clients(*nodes[k]) - c0[k]);
    std::fprintf(stderr,
                 "  %ld threads, %lld connections (largest per node), %.1f KiB per waiter (%.1f "
                 "KiB of it heap)\n",
                 f.threads, f.connections, f.rss_kib_per_waiter, heap_per_waiter);
    const auto held_for = clock_type::now() - held_since;
    std::fprintf(stderr,
                 "  the holders held for %.1f s before their releases began (TTL %.0f s)%s\n",
                 std::chrono::duration<double>(held_for).count(),
                 std::chrono::duration<double>(waiters_ttl).count(),
                 held_for >= waiters_ttl ? ": their keys expired, the figures are not valid" : "");
    std::vector<double> wake_us;
    for (int i = 0; i < waiters; ++i) {
        const auto t = clock_type::now().time_since_epoch().count();
        try {
            holders[i].release();
        } catch (const std::exception& e) {
            holder_errors.add(e.what());
        }
        if (i < wakes) {
            // A waiter that gave up (its holder's release failed) is not waited for.
            while (held_at[i] == 0 && !ended[i] &&
                   clock_type::now().time_since_epoch().count() - t < 5'000'000'000LL)
                std::this_thread::yield();
            if (held_at[i] != 0) wake_us.push_back(static_cast<double>(held_at[i] - t) / 1000.0);
        }
    }
    for (auto& c : callers) c.join();
    const auto phase = clock_type::now() - held_since;
    std::fprintf(stderr,
                 "  the phase took %.1f s from the holders' locks to the last waiter's end\n",
                 std::chrono::duration<double>(phase).count());
    waiter_errors.print("waiters");
    holder_errors.print("holders");
    f.wake_p50_us = redcoord::bench::percentile(wake_us, 50);
    return f;
}

// One waiter, one holder, released `n` times: the single-waiter hand-off of the same method.
double single_handoff_p50_us(local_server& node, int n) {
    redcoord::connection_pool pool(node.endpoint());
    std::vector<double> us;
    for (int i = 0; i < n; ++i) {
        redcoord::distributed_lock holder(pool, "bench:handoff", {.timing = {.ttl = 60s}});
        if (!holder.acquire(0ms)) throw std::runtime_error("handoff holder failed");
        std::atomic<std::int64_t> held_at{0};
        std::thread waiter([&] {
            redcoord::distributed_lock lock(pool, "bench:handoff", {.timing = {.ttl = 60s}});
            if (lock.acquire(10s)) {
                held_at = clock_type::now().time_since_epoch().count();
                lock.release();
            }
        });
        // The waiter waits once it listens for the release (a subscribed channel).
        const auto until = clock_type::now() + 5s;
        while (channels(node) < 1 && clock_type::now() < until) std::this_thread::sleep_for(1ms);
        std::this_thread::sleep_for(5ms);
        const auto t = clock_type::now().time_since_epoch().count();
        holder.release();
        waiter.join();
        if (held_at != 0) us.push_back(static_cast<double>(held_at - t) / 1000.0);
        // The next waiter must not be taken for waiting by this one's subscription.
        const auto gone = clock_type::now() + 5s;
        while (channels(node) > 0 && clock_type::now() < gone) std::this_thread::sleep_for(1ms);
    }
    return redcoord::bench::percentile(us, 50);
}

// The threads, connections and memory of the 10,000 async waiters.
void print_async_costs(const runtime_bench::async_figures& async) {
    using redcoord::bench::print_value;
    print_value("async_waiters10000_threads", static_cast<double>(async.threads), "threads");
    print_value("async_waiters10000_threads_peak", static_cast<double>(async.threads_peak),
                "threads");
    print_value("async_waiters10000_connections", static_cast<double>(async.connections),
                "connections");
    print_value("async_waiters10000_rss_kib_per_waiter", async.rss_kib_per_waiter, "KiB");
}

}  // namespace

int main(int, char**) {
    if (const char* w = std::getenv("REDCOORD_BENCH_WAITERS")) waiters = std::max(1, std::atoi(w));
    std::vector<std::unique_ptr<local_server>> servers;
    std::vector<local_server*> nodes;
    for (int i = 0; i < 5; ++i) {
        servers.push_back(std::make_unique<local_server>());
        nodes.push_back(servers.back().get());
    }
    using redcoord::bench::print_ratio;
    using redcoord::bench::print_value;
    // REDCOORD_BENCH_PIPELINED_ONLY=1 prints only the pipelined_lock ratios (a quick look
    // at the async lock path without the minutes of the waiter and isolation runs).
    if (const char* p = std::getenv("REDCOORD_BENCH_PIPELINED_ONLY"); p && *p == '1') {
        const auto figures = runtime_bench::pipelined_vs_raw(*nodes[2], 3.0);
        print_ratio("pipelined_lock_vs_raw_pipelined", figures.vs_same_scripts);
        print_ratio("pipelined_lock_vs_raw_setnx", figures.vs_setnx);
        print_ratio("pipelined_lock_tls_vs_plain", runtime_bench::pipelined_tls_vs_plain(3.0));
        return 0;
    }

    // REDCOORD_BENCH_ASYNC_ONLY=1 prints only the async waiters' figures (their threads named).
    if (const char* p = std::getenv("REDCOORD_BENCH_ASYNC_ONLY"); p && *p == '1') {
        print_async_costs(runtime_bench::async_waiters(*nodes[1], 10000, 200));
        return 0;
    }

    // REDCOORD_BENCH_REDLOCK_ONLY=1 runs only the Redlock waiters' phase (its set-up's length).
    const char* redlock_env = std::getenv("REDCOORD_BENCH_REDLOCK_ONLY");
    const bool redlock_only = redlock_env && *redlock_env == '1';
    const double handoff = redlock_only ? 0.0 : single_handoff_p50_us(*nodes[0], 200);

    figures single;
    if (!redlock_only) {
        std::fprintf(stderr, "distributed_lock, %d waiters:\n", waiters);
        redcoord::connection_pool holder_pool(nodes[0]->endpoint());
        redcoord::connection_pool pool(
            nodes[0]->endpoint());  // the waiters' pool, as a service would have one
        auto kind = [](redcoord::connection_pool& p, int i) {
            auto l = std::make_shared<redcoord::distributed_lock>(
                p, "bench:r" + std::to_string(i),
                redcoord::lock_options{.timing = {.ttl = waiters_ttl}});
            return lockish{[l](std::chrono::milliseconds w) { return l->acquire(w).has_value(); },
                           [l] { l->release(); }};
        };
        single = measure(
            {nodes[0]}, [&](int i) { return kind(holder_pool, i); },
            [&](int i) { return kind(pool, i); }, 200);
        print_value("waiters1000_threads", static_cast<double>(single.threads), "threads");
        print_value("waiters1000_connections", static_cast<double>(single.connections),
                    "connections");
        print_value("waiters1000_rss_kib_per_waiter", single.rss_kib_per_waiter, "KiB");
        print_value("wake_after_release_p50_us", single.wake_p50_us, "us");
        print_value("lock_handoff_p50_us", handoff, "us");
        print_ratio("wake_after_release_vs_handoff",
                    handoff > 0 ? single.wake_p50_us / handoff : 0.0);
    }

    std::fprintf(stderr, "redlock over 5 masters, %d waiters:\n", waiters);
    figures five;
    {
        std::vector<std::unique_ptr<redcoord::connection_pool>> holder_pools, pools;
        std::vector<redcoord::connection_pool*> hp, wp;
        for (auto* n : nodes) {
            holder_pools.push_back(std::make_unique<redcoord::connection_pool>(n->endpoint()));
            pools.push_back(std::make_unique<redcoord::connection_pool>(n->endpoint()));
            hp.push_back(holder_pools.back().get());
            wp.push_back(pools.back().get());
        }
        auto kind = [](const std::vector<redcoord::connection_pool*>& p, int i) {
            auto l = std::make_shared<redcoord::redlock>(
                p, "bench:q" + std::to_string(i),
                redcoord::redlock_options{.timing = {.ttl = waiters_ttl}});
            // A failed release names each node's outcome, so the tally shows the causes.
            auto release = [l] {
                try {
                    l->release();
                } catch (const std::exception& e) {
                    static constexpr const char* names[] = {"yes",     "no",          "error",
                                                            "timeout", "unreachable", "not_waited",
                                                            "busy",    "connecting"};
                    std::string nodes;
                    for (const auto& o : l->last_outcomes())
                        nodes += std::string(nodes.empty() ? "" : " ") +
                                 names[static_cast<int>(o.state)] + "(" +
                                 std::to_string(o.latency.count() / 1000) + " ms)";
                    std::string what = e.what();
                    // The resource's name differs per waiter: the tally counts by cause.
                    if (auto at = what.find(": "); at != std::string::npos) what.erase(0, at + 2);
                    throw std::runtime_error(what + " [nodes: " + nodes + "]");
                }
            };
            return lockish{[l](std::chrono::milliseconds w) { return l->acquire(w).has_value(); },
                           release};
        };
        five = measure(
            nodes, [&](int i) { return kind(hp, i); }, [&](int i) { return kind(wp, i); }, 200);
    }
    print_value("redlock5_waiters1000_threads", static_cast<double>(five.threads), "threads");
    print_value("redlock5_waiters1000_connections_per_node", static_cast<double>(five.connections),
                "connections");
    print_value("redlock5_waiters1000_rss_kib_per_waiter", five.rss_kib_per_waiter, "KiB");
    print_value("redlock5_wake_after_release_p50_us", five.wake_p50_us, "us");
    if (redlock_only) return 0;

    std::fprintf(stderr, "async_acquire, 10000 waiters on the runtime's event loop:\n");
    const auto async = runtime_bench::async_waiters(*nodes[1], 10000, 200);
    std::fprintf(stderr, "  %ld threads, %lld connections, %.2f KiB per waiter\n", async.threads,
                 async.connections, async.rss_kib_per_waiter);
    print_async_costs(async);
    print_value("async_wake_after_release_p50_us", async.wake_p50_us, "us");
    print_ratio("async_wake_vs_handoff", handoff > 0 ? async.wake_p50_us / handoff : 0.0);
    const auto pipelined = runtime_bench::pipelined_vs_raw(*nodes[2], 3.0);
    print_ratio("pipelined_lock_vs_raw_pipelined", pipelined.vs_same_scripts);
    print_ratio("pipelined_lock_vs_raw_setnx", pipelined.vs_setnx);
    print_ratio("pipelined_lock_tls_vs_plain", runtime_bench::pipelined_tls_vs_plain(3.0));

    // REDCOORD_BENCH_ISOLATION_S shortens the 30 s isolation run (e.g. for a quick look).
    auto isolation_run = std::chrono::seconds(30);
    if (const char* s = std::getenv("REDCOORD_BENCH_ISOLATION_S"))
        isolation_run = std::chrono::seconds(std::max(1, std::atoi(s)));
    std::fprintf(stderr,
                 "isolation: 100 watchdog locks, three paused servers, two 5 s slots, %lld s:\n",
                 static_cast<long long>(isolation_run.count()));
    const auto iso = redcoord::scenario::run_isolation(isolation_run, 100);
    print_value("isolation_extension_gap_max_ms",
                static_cast<double>(iso.extension_gap_max.count()), "ms");
    print_value("isolation_locks_lost", static_cast<double>(iso.locks_lost + iso.keys_expired),
                "locks");
    print_value("isolation_tick_workers", static_cast<double>(iso.tick_workers), "threads");
    return 0;
}
