#include "async_bench.hpp"

#include "common.hpp"
#include "process_stats.hpp"

#include <redcoord/core/runtime.hpp>
#include <redcoord/lock/async.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <hiredis/hiredis.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
using redcoord::testing::local_server;
namespace asio = boost::asio;

namespace runtime_bench {

async_figures async_waiters(local_server& node, int n, int wakes) {
    auto rt = redcoord::runtime::create();
    redcoord::connection_pool holder_pool(node.endpoint(), {}, rt);
    redcoord::connection_pool pool(node.endpoint(), {}, rt);
    std::vector<std::unique_ptr<redcoord::distributed_lock>> holders, locks;
    for (int i = 0; i < n; ++i) {
        holders.push_back(std::make_unique<redcoord::distributed_lock>(
            holder_pool, "bench:a" + std::to_string(i),
            redcoord::lock_options{.timing = {.ttl = 120s}}));
        if (!holders.back()->try_lock()) throw std::runtime_error("holder could not lock");
    }
    {
        // Warm the event loop, its link and the pool, so the baseline has their threads.
        redcoord::distributed_lock warm(pool, "bench:warm");
        if (redcoord::async_acquire(warm, 1s, asio::use_future).get()) warm.unlock();
    }
    std::this_thread::sleep_for(500ms);
    const long t0 = threads_now();
    const long long c0 = clients(node);
    const double r0 = rss_kib();
    std::vector<std::atomic<std::int64_t>> held_at(n);
    for (auto& h : held_at) h = 0;
    std::atomic<int> errors{0};
    for (int i = 0; i < n; ++i) {
        locks.push_back(std::make_unique<redcoord::distributed_lock>(
            pool, "bench:a" + std::to_string(i), redcoord::lock_options{.timing = {.ttl = 120s}}));
        redcoord::async_acquire(
            *locks.back(), 300s,
            [&held_at, &errors, i](std::exception_ptr e,
                                   std::optional<redcoord::lock_acquisition> a) {
                if (e || !a)
                    ++errors;
                else
                    held_at[i] = clock_type::now().time_since_epoch().count();
            });
    }
    const auto until = clock_type::now() + 120s;
    while (channels(node) < n && clock_type::now() < until) std::this_thread::sleep_for(20ms);
    std::this_thread::sleep_for(1s);
    async_figures f;
    f.threads = threads_now() - t0;
    f.connections = clients(node) - c0;
    f.rss_kib_per_waiter = (rss_kib() - r0) / n;
    std::vector<double> wake_us;
    for (int i = 0; i < n; ++i) {
        const auto t = clock_type::now().time_since_epoch().count();
        holders[i]->unlock();
        if (i < wakes) {
            while (held_at[i] == 0 && errors == 0 &&
                   clock_type::now().time_since_epoch().count() - t < 5'000'000'000LL)
                std::this_thread::yield();
            if (held_at[i] != 0) wake_us.push_back(static_cast<double>(held_at[i] - t) / 1000.0);
        }
    }
    const auto all = clock_type::now() + 60s;
    for (int i = 0; i < n && clock_type::now() < all; ++i)
        while (held_at[i] == 0 && errors == 0 && clock_type::now() < all)
            std::this_thread::sleep_for(1ms);
    for (auto& l : locks) l->unlock();
    if (errors > 0) std::fprintf(stderr, "  %d of %d async waiters failed\n", errors.load(), n);
    f.wake_p50_us = redcoord::bench::percentile(wake_us, 50);
    return f;
}

namespace {

// 64 keys, each acquired with SET NX PX and released with the EVALSHA compare-and-delete,
// 64 commands per write: the raw ceiling of pipelined locking on one connection.
double raw_pipelined_ops(local_server& node, double seconds) {
    redisContext* c = redisConnect("127.0.0.1", node.endpoint().port);
    if (!c || c->err) throw std::runtime_error("raw connect failed");
    const char* cad =
        "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end "
        "return 0";
    auto* r = static_cast<redisReply*>(redisCommand(c, "SCRIPT LOAD %s", cad));
    const std::string sha(r->str, r->len);
    freeReplyObject(r);
    const std::string token(40, 'f');
    long long ops = 0;
    const auto t0 = clock_type::now();
    const auto end = t0 + std::chrono::duration<double>(seconds);
    while (clock_type::now() < end) {
        for (int k = 0; k < 64; ++k)
            redisAppendCommand(c, "SET bench:raw%d %s NX PX 10000", k, token.c_str());
        for (int k = 0; k < 64; ++k) {
            void* rep = nullptr;
            redisGetReply(c, &rep);
            freeReplyObject(rep);
        }
        for (int k = 0; k < 64; ++k)
            redisAppendCommand(c, "EVALSHA %s 1 bench:raw%d %s", sha.c_str(), k, token.c_str());
        for (int k = 0; k < 64; ++k) {
            void* rep = nullptr;
            redisGetReply(c, &rep);
            freeReplyObject(rep);
        }
        ops += 64;
    }
    const double s = std::chrono::duration<double>(clock_type::now() - t0).count();
    redisFree(c);
    return static_cast<double>(ops) / s;
}

double async_pipelined_ops(local_server& node, double seconds) {
    asio::io_context io;
    auto rt = redcoord::runtime::create(io);
    redcoord::connection_pool pool(node.endpoint(), {}, rt);
    std::atomic<long long> ops{0};
    const auto end = clock_type::now() + std::chrono::duration<double>(seconds);
    std::vector<std::unique_ptr<redcoord::distributed_lock>> locks;
    for (int k = 0; k < 64; ++k)
        locks.push_back(std::make_unique<redcoord::distributed_lock>(
            pool, "bench:p" + std::to_string(k), redcoord::lock_options{.timing = {.ttl = 10s}}));
    const auto t0 = clock_type::now();
    for (auto& l : locks)
        asio::co_spawn(
            io,
            [&, lock = l.get()]() -> asio::awaitable<void> {
                while (clock_type::now() < end) {
                    if (co_await redcoord::async_acquire(*lock, 0ms, asio::use_awaitable)) {
                        (void)co_await redcoord::async_release(*lock, asio::use_awaitable);
                        ++ops;
                    }
                }
            },
            asio::detached);
    io.run();
    const double s = std::chrono::duration<double>(clock_type::now() - t0).count();
    return static_cast<double>(ops.load()) / s;
}

}  // namespace

double pipelined_vs_raw(local_server& node, double seconds) {
    const double raw = raw_pipelined_ops(node, seconds);
    const double lib = async_pipelined_ops(node, seconds);
    std::fprintf(stderr, "  pipelined: %.0f lock+unlock/s through the runtime, %.0f raw\n", lib,
                 raw);
    return raw > 0 ? lib / raw : 0.0;
}

}  // namespace runtime_bench
