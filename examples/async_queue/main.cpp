// Coroutine consumers that pop a reliable_queue with async_pop (redcoord/queue/async.hpp), and
// a coroutine producer, on the program's own io_context: runtime::create(io) puts redcoord's
// asynchronous operations on it, so one thread runs every task, and a consumer waiting for a
// message blocks nobody.
//
//   async_queue [--redis redis://host:port] [--consumers 4] [--messages 200]
//
// Without --redis it starts a local redis-server of its own.
#include <redcoord/core/runtime.hpp>
#include <redcoord/queue/async.hpp>
#include <redcoord/testing/server_or_url.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <map>
#include <memory>
#include <string>

using namespace std::chrono_literals;
namespace asio = boost::asio;

namespace {

struct tally {
    std::map<std::string, int> seen;  // payload -> deliveries
    bool producing = true;
};

// The producer: pushes `n` messages, a few at a time, pausing (asynchronously) between them so
// that the consumers really wait for some.
asio::awaitable<void> produce(redcoord::reliable_queue& q, int n, tally& t) {
    asio::steady_timer pause(co_await asio::this_coro::executor);
    for (int i = 0; i < n; ++i) {
        q.push("job-" + std::to_string(i));  // one round trip on a pooled connection
        if (i % 10 == 9) {
            pause.expires_after(2ms);
            co_await pause.async_wait(asio::use_awaitable);
        }
    }
    t.producing = false;
}

// A consumer: pops until the producer is done and the queue stays empty for 500 ms.
asio::awaitable<void> consume(redcoord::reliable_queue& q, tally& t) {
    for (;;) {
        // Suspends this coroutine (not the thread) until a message comes or 500 ms pass.
        auto d = co_await redcoord::async_pop(q, 500ms, asio::use_awaitable);
        if (!d) {
            if (t.producing) continue;
            co_return;
        }
        ++t.seen[d->payload];
        if (!q.ack(*d)) throw std::runtime_error("ack of " + d->id + " found nothing");
    }
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"coroutine consumers of a reliable_queue through async_pop"};
    std::string url;
    int consumers = 4, messages = 200;
    app.add_option("--redis", url, "Redis URL (default: a local server of its own)");
    app.add_option("--consumers", consumers, "Concurrent consumer coroutines")
        ->check(CLI::Range(1, 10000));
    app.add_option("--messages", messages, "Messages to produce")->check(CLI::Range(1, 1000000));
    CLI11_PARSE(app, argc, argv);

    try {
        const redcoord::testing::server_or_url redis(url);  // a local server without --redis
        const redcoord::endpoint& ep = redis.endpoint();
        asio::io_context io;
        auto rt = redcoord::runtime::create(io);
        redcoord::connection_pool pool(ep, {}, rt);
        redcoord::reliable_queue q(pool, "example:async");
        tally t;
        std::exception_ptr failure;
        auto note = [&](std::exception_ptr e) {
            if (e && !failure) failure = e;
        };
        for (int i = 0; i < consumers; ++i) asio::co_spawn(io, consume(q, t), note);
        asio::co_spawn(io, produce(q, messages, t), note);
        io.run();  // this thread is the event loop; it returns when every task is done
        if (failure) std::rethrow_exception(failure);
        int twice = 0;
        for (const auto& [payload, n] : t.seen)
            if (n != 1) ++twice;
        std::printf(
            "async_queue: %d consumers on one thread: %zu of %d messages delivered, %d more than "
            "once\n",
            consumers, t.seen.size(), messages, twice);
        const bool ok = twice == 0 && t.seen.size() == static_cast<std::size_t>(messages);
        std::printf("async_queue: %s\n", ok ? "ok" : "FAILED");
        return ok ? 0 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "async_queue: %s\n", e.what());
        return 1;
    }
}
