// Candidates that take turns as leader, each a coroutine awaiting its leadership with
// async_wait_until_leader (redcoord/election/async.hpp), all on the program's own
// io_context: runtime::create(io) puts redcoord's asynchronous operations on it, so one thread
// runs every candidate, and a candidate that waits blocks nobody. Each leader does a short
// piece of leader work under its epoch (the fencing token), then resigns; the resign's
// handoff signal wakes another candidate's wait at once. Blocking calls (resign, stop) hop to
// a small thread pool so that the event loop never blocks.
//
//   async_election [--redis redis://host:port] [--candidates 3] [--terms 6]
//
// Without --redis it starts a local redis-server of its own.
#include <redcoord/core/runtime.hpp>
#include <redcoord/election/async.hpp>
#include <redcoord/testing/server_or_url.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

using namespace std::chrono_literals;
namespace asio = boost::asio;

namespace {

struct tally {
    int terms_left = 0;
    std::vector<std::pair<std::string, std::uint64_t>> terms;  // who led, under which epoch
};

// One candidate: waits for its leadership (suspending this coroutine, not the thread), works
// under it, hands it on. Ends when the last term is done and the electors stop (the waits of
// the others then complete with operation_aborted).
asio::awaitable<void> candidate(redcoord::leader_elector& e,
                                std::vector<std::unique_ptr<redcoord::leader_elector>>& everyone,
                                asio::thread_pool& blocking, tally& t) {
    auto loop = co_await asio::this_coro::executor;
    for (;;) {
        std::optional<redcoord::leader_elector::leadership> l;
        try {
            l = co_await redcoord::async_wait_until_leader(e, 30s, asio::use_awaitable);
        } catch (const boost::system::system_error& x) {
            if (x.code() == asio::error::operation_aborted) co_return;  // the elector stopped
            throw;
        }
        if (!l) throw std::runtime_error(e.identity() + " was not elected within 30 s");
        t.terms.emplace_back(e.identity(), l->epoch);
        // The leader work: a real one would write with l->epoch as its fencing token and stop
        // once l->stop is stopped (the leadership ended).
        asio::steady_timer work(loop, 50ms);
        co_await work.async_wait(asio::use_awaitable);
        const bool last = --t.terms_left == 0;
        // resign() and stop() wait for a round trip: off the event loop, then back.
        co_await asio::post(blocking, asio::use_awaitable);
        if (last) {
            for (auto& other : everyone) other->stop();
        } else {
            (void)e.resign();
        }
        co_await asio::post(loop, asio::use_awaitable);
        if (last) co_return;
    }
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"coroutine candidates taking turns as leader, on one thread"};
    std::string url;
    int candidates = 3, terms = 6;
    app.add_option("--redis", url, "Redis URL (default: a local server of its own)");
    app.add_option("--candidates", candidates, "Candidates")->check(CLI::Range(1, 1000));
    app.add_option("--terms", terms, "Leaderships to go through")->check(CLI::Range(1, 100000));
    CLI11_PARSE(app, argc, argv);

    try {
        const redcoord::testing::server_or_url redis(url);  // a local server without --redis
        const redcoord::endpoint& ep = redis.endpoint();
        asio::io_context io;
        auto rt = redcoord::runtime::create(io);
        redcoord::connection_pool pool(ep, {}, rt);
        asio::thread_pool blocking(1);

        redcoord::election_options o;
        o.term = 3s;  // a leader that vanished is replaced within 3 s; a resign at once
        std::vector<std::unique_ptr<redcoord::leader_elector>> everyone;
        for (int i = 0; i < candidates; ++i) {
            o.identity = "candidate-" + std::to_string(i);
            everyone.push_back(
                std::make_unique<redcoord::leader_elector>(pool, "example:async_election", o));
        }
        tally t;
        t.terms_left = terms;
        std::exception_ptr failure;
        auto keep_first = [&](const std::exception_ptr& e) {
            if (e && !failure) failure = e;
        };
        for (auto& e : everyone)
            asio::co_spawn(io, candidate(*e, everyone, blocking, t), keep_first);
        for (auto& e : everyone) e->start();
        io.run();  // this thread is the event loop; it returns when every candidate is done
        blocking.join();
        if (failure) std::rethrow_exception(failure);

        // One leadership after the other, each under a greater epoch.
        bool ok = t.terms.size() == static_cast<std::size_t>(terms);
        for (std::size_t i = 1; ok && i < t.terms.size(); ++i)
            ok = t.terms[i].second > t.terms[i - 1].second;
        for (const auto& [who, epoch] : t.terms)
            std::printf("async_election: %s led under epoch %llu\n", who.c_str(),
                        static_cast<unsigned long long>(epoch));
        std::printf("async_election: %s\n", ok ? "ok" : "FAILED");
        return ok ? 0 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "async_election: %s\n", e.what());
        return 1;
    }
}
