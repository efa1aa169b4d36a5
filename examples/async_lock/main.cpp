// Coroutines that share one lock through async_acquire and async_release
// (redcoord/lock/async.hpp), on the program's own io_context: runtime::create(io) puts
// redcoord's asynchronous operations on it, so one thread runs every task, and a task that
// waits for the lock blocks nobody.
//
//   async_lock [--redis redis://host:port] [--tasks 8] [--rounds 20]
//
// Without --redis it starts a local redis-server of its own.
#include <redcoord/core/runtime.hpp>
#include <redcoord/lock/async.hpp>
#include <redcoord/testing/server_or_url.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

using namespace std::chrono_literals;
namespace asio = boost::asio;

namespace {

struct tally {
    int inside = 0, overlaps = 0, sections = 0, stale = 0;
    std::uint64_t highest_fence = 0;
};

// One task: `rounds` critical sections, each under the lock, each writing with its fencing
// token (a stale token would mean two holders).
asio::awaitable<void> task(redcoord::connection_pool& pool, int rounds, tally& t) {
    redcoord::distributed_lock lock(pool, "example:async", {.timing = {.ttl = 10s}});
    asio::steady_timer work(co_await asio::this_coro::executor);
    for (int i = 0; i < rounds; ++i) {
        // Suspends this coroutine (not the thread) until the lock is free: other tasks run.
        auto got = co_await redcoord::async_acquire(lock, 30s, asio::use_awaitable);
        if (!got) throw std::runtime_error("the lock stayed busy for 30 s");
        if (t.inside++ != 0) ++t.overlaps;
        if (got->fencing_token <= t.highest_fence) ++t.stale;
        t.highest_fence = got->fencing_token;
        work.expires_after(1ms);  // the work, itself asynchronous
        co_await work.async_wait(asio::use_awaitable);
        --t.inside;
        ++t.sections;
        // Over the runtime's pipelined link: the event loop's thread never waits for the pool.
        co_await redcoord::async_release(lock, asio::use_awaitable);
    }
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"coroutines sharing a lock through async_acquire"};
    std::string url;
    int tasks = 8, rounds = 20;
    app.add_option("--redis", url, "Redis URL (default: a local server of its own)");
    app.add_option("--tasks", tasks, "Concurrent coroutines")->check(CLI::Range(1, 10000));
    app.add_option("--rounds", rounds, "Critical sections per coroutine")
        ->check(CLI::Range(1, 100000));
    CLI11_PARSE(app, argc, argv);

    try {
        const redcoord::testing::server_or_url redis(url);  // a local server without --redis
        const redcoord::endpoint& ep = redis.endpoint();
        asio::io_context io;
        auto rt = redcoord::runtime::create(io);
        redcoord::connection_pool pool(ep, {}, rt);
        tally t;
        std::exception_ptr failure;
        for (int i = 0; i < tasks; ++i)
            asio::co_spawn(io, task(pool, rounds, t), [&](std::exception_ptr e) {
                if (e && !failure) failure = e;
            });
        io.run();  // this thread is the event loop; it returns when every task is done
        if (failure) std::rethrow_exception(failure);
        std::printf(
            "async_lock: %d tasks x %d rounds on one thread: %d sections, %d overlaps, "
            "%d stale fencing tokens\n",
            tasks, rounds, t.sections, t.overlaps, t.stale);
        const bool ok = t.overlaps == 0 && t.stale == 0 && t.sections == tasks * rounds;
        std::printf("async_lock: %s\n", ok ? "ok" : "FAILED");
        return ok ? 0 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "async_lock: %s\n", e.what());
        return 1;
    }
}
