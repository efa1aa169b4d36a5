// Coroutines that share a semaphore's permits through async_acquire and async_release
// (redcoord/limit/async.hpp), on the program's own io_context: runtime::create(io) puts
// redcoord's asynchronous operations on it, so one thread runs every task, a task that waits
// for a permit blocks nobody, and a release wakes the next waiter at once.
//
//   async_semaphore [--redis redis://host:port] [--tasks 8] [--permits 3] [--rounds 20]
//
// Without --redis it starts a local redis-server of its own.
#include <redcoord/core/runtime.hpp>
#include <redcoord/limit/async.hpp>
#include <redcoord/testing/server_or_url.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <stdexcept>

using namespace std::chrono_literals;
namespace asio = boost::asio;

namespace {

struct tally {
    int inside = 0, most_inside = 0, sections = 0;
};

// One task: `rounds` sections, each holding one permit while it works.
asio::awaitable<void> task(redcoord::semaphore& sem, int rounds, tally& t) {
    asio::steady_timer work(co_await asio::this_coro::executor);
    for (int i = 0; i < rounds; ++i) {
        // Suspends this coroutine (not the thread) until a permit is free: other tasks run.
        auto p = co_await redcoord::async_acquire(sem, 1, 30s, asio::use_awaitable);
        if (!p) throw std::runtime_error("no permit came free for 30 s");
        t.most_inside = std::max(t.most_inside, ++t.inside);
        work.expires_after(2ms);  // the work, itself asynchronous
        co_await work.async_wait(asio::use_awaitable);
        --t.inside;
        ++t.sections;
        // Over the runtime's pipelined link: the event loop's thread never waits for the pool.
        co_await redcoord::async_release(*p, asio::use_awaitable);
    }
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"coroutines sharing a semaphore through async_acquire"};
    std::string url;
    int tasks = 8, permits = 3, rounds = 20;
    app.add_option("--redis", url, "Redis URL (default: a local server of its own)");
    app.add_option("--tasks", tasks, "Concurrent coroutines")->check(CLI::Range(1, 10000));
    app.add_option("--permits", permits, "The semaphore's permits")->check(CLI::Range(1, 1000));
    app.add_option("--rounds", rounds, "Sections per coroutine")->check(CLI::Range(1, 100000));
    CLI11_PARSE(app, argc, argv);

    try {
        const redcoord::testing::server_or_url redis(url);  // a local server without --redis
        const redcoord::endpoint& ep = redis.endpoint();
        asio::io_context io;
        auto rt = redcoord::runtime::create(io);
        redcoord::connection_pool pool(ep, {}, rt);
        redcoord::semaphore sem(
            pool, "example:async-slots",
            {.permits = static_cast<std::uint64_t>(permits), .timing = {.ttl = 10s}});
        tally t;
        std::exception_ptr failure;
        for (int i = 0; i < tasks; ++i)
            asio::co_spawn(io, task(sem, rounds, t), [&](std::exception_ptr e) {
                if (e && !failure) failure = e;
            });
        io.run();  // this thread is the event loop; it returns when every task is done
        if (failure) std::rethrow_exception(failure);
        std::printf(
            "async_semaphore: %d tasks x %d rounds on one thread, %d permits: %d sections, "
            "at most %d at once\n",
            tasks, rounds, permits, t.sections, t.most_inside);
        const bool ok = t.sections == tasks * rounds && t.most_inside <= permits;
        std::printf("async_semaphore: %s\n", ok ? "ok" : "FAILED");
        return ok ? 0 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "async_semaphore: %s\n", e.what());
        return 1;
    }
}
