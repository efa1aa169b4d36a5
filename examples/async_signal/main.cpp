// Coroutines meeting at a barrier round after round with async_arrive_and_wait, and one more
// that follows the rounds on a channel with async_wait (redcoord/signaling/async.hpp), all on
// the program's own io_context: runtime::create(io) puts redcoord's asynchronous operations
// on it, so one thread runs every coroutine, and a coroutine that waits blocks nobody. A plain
// thread stands in for another process: it is one more party of the barrier, with the
// blocking arrive_and_wait, and announces each passed round on the channel.
//
//   async_signal [--redis redis://host:port] [--tasks 4] [--rounds 10]
//
// Without --redis it starts a local redis-server of its own.
#include <redcoord/core/runtime.hpp>
#include <redcoord/signaling/async.hpp>
#include <redcoord/testing/server_or_url.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
namespace asio = boost::asio;

namespace {

constexpr const char* barrier_name = "example:async_signal";
constexpr const char* rounds_channel = "example:async_signal:rounds";

struct tally {
    std::vector<std::vector<std::uint64_t>> generations;  // per task, per round
    std::vector<std::string> announced;                   // what the watcher heard
};

// One party: `rounds` arrivals; each suspends this coroutine (not the thread) until every
// party has arrived.
asio::awaitable<void> party(redcoord::signal_hub& hub, std::size_t parties, int rounds,
                            std::vector<std::uint64_t>& seen) {
    redcoord::barrier b(hub, barrier_name, parties);
    for (int i = 0; i < rounds; ++i) {
        auto generation = co_await redcoord::async_arrive_and_wait(b, 30s, asio::use_awaitable);
        if (!generation) throw std::runtime_error("the other parties did not come within 30 s");
        seen.push_back(*generation);
    }
}

// Follows the rounds: one signal per passed round, each awaited without a thread.
asio::awaitable<void> watcher(redcoord::waiter& w, int rounds, std::vector<std::string>& heard) {
    for (int i = 0; i < rounds; ++i) {
        auto s = co_await redcoord::async_wait(w, 30s, asio::use_awaitable);
        if (!s) throw std::runtime_error("no round announced within 30 s");
        heard.push_back(s->payload);
    }
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"coroutines meeting at a barrier and watching a channel, on one thread"};
    std::string url;
    int tasks = 4, rounds = 10;
    app.add_option("--redis", url, "Redis URL (default: a local server of its own)");
    app.add_option("--tasks", tasks, "Coroutine parties")->check(CLI::Range(1, 1000));
    app.add_option("--rounds", rounds, "Barrier rounds")->check(CLI::Range(1, 100000));
    CLI11_PARSE(app, argc, argv);

    try {
        const redcoord::testing::server_or_url redis(url);  // a local server without --redis
        const redcoord::endpoint& ep = redis.endpoint();
        asio::io_context io;
        auto rt = redcoord::runtime::create(io);
        redcoord::connection_pool pool(ep, {}, rt);
        redcoord::signal_hub hub(pool);
        const auto parties = static_cast<std::size_t>(tasks) + 1;           // + the other "process"
        (void)redcoord::barrier(hub, barrier_name, parties).force_reset();  // a fresh start
        auto w = hub.listen({rounds_channel});  // before any round can be announced

        tally t;
        t.generations.resize(static_cast<std::size_t>(tasks));
        std::exception_ptr failure;
        auto keep_first = [&](std::exception_ptr e) {
            if (e && !failure) failure = e;
        };
        for (auto& seen : t.generations)
            asio::co_spawn(io, party(hub, parties, rounds, seen), keep_first);
        asio::co_spawn(io, watcher(w, rounds, t.announced), keep_first);

        std::exception_ptr other_failure;
        std::thread other([&] {
            try {
                redcoord::barrier b(hub, barrier_name, parties);
                for (int i = 0; i < rounds; ++i)
                    hub.broadcast(rounds_channel,
                                  "round " + std::to_string(b.arrive_and_wait(30s)) + " passed");
            } catch (...) {
                other_failure = std::current_exception();
            }
        });
        io.run();  // this thread is the event loop; it returns when every coroutine is done
        other.join();
        if (other_failure) std::rethrow_exception(other_failure);
        if (failure) std::rethrow_exception(failure);

        // Every party passed the same consecutive generations; the watcher heard each round.
        const auto& first = t.generations.front();
        bool ok =
            first.size() == static_cast<std::size_t>(rounds) && t.announced.size() == first.size();
        for (std::size_t i = 0; ok && i < first.size(); ++i)
            ok = first[i] == first.front() + i &&
                 t.announced[i] == "round " + std::to_string(first[i]) + " passed";
        for (const auto& seen : t.generations) ok = ok && seen == first;
        std::printf(
            "async_signal: %d coroutine parties + 1 thread x %d rounds on one thread: "
            "%zu rounds announced\n",
            tasks, rounds, t.announced.size());
        std::printf("async_signal: %s\n", ok ? "ok" : "FAILED");
        return ok ? 0 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "async_signal: %s\n", e.what());
        return 1;
    }
}
