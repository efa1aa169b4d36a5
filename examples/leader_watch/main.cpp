// Prints leadership changes as the callbacks report them. Several candidates campaign; the
// leader resigns every few hundred milliseconds so the leadership moves around.
//
//   example_leader_watch [--redis redis://host:port] [--candidates 3] [--seconds 5]
//                        [--resign-every-ms 1000]
//
// Without --redis it starts its own redis-server.

#include <redcoord/election/leader_elector.hpp>
#include <redcoord/testing/server_or_url.hpp>

#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

int main(int argc, char** argv) {
    CLI::App app{"watch leadership changes"};
    std::vector<std::string> urls;
    int candidates = 3, seconds = 5, resign_every_ms = 1000;
    app.add_option("--redis", urls, "Redis URL (repeatable; the election uses the first)");
    app.add_option("--candidates", candidates, "candidates in this process")
        ->check(CLI::Range(1, 16));
    app.add_option("--seconds", seconds, "run time in seconds")->check(CLI::Range(1, 3600));
    app.add_option("--resign-every-ms", resign_every_ms, "the leader resigns this often (0: never)")
        ->check(CLI::Range(0, 3600000));
    CLI11_PARSE(app, argc, argv);

    const redcoord::testing::server_or_url redis(
        urls.empty() ? std::string() : urls.front());  // a local server without --redis
    const redcoord::endpoint& ep = redis.endpoint();
    redcoord::connection_pool pool(ep);

    std::mutex out;
    auto say = [&](const std::string& who, const std::string& what) {
        std::lock_guard g(out);
        std::cout << who << ": " << what << std::endl;
    };
    std::vector<std::unique_ptr<redcoord::leader_elector>> electors;
    // A slot runs while its connection is kept.
    std::vector<boost::signals2::scoped_connection> slots;
    for (int i = 0; i < candidates; ++i) {
        redcoord::election_options o;
        o.identity = "node-" + std::to_string(i);
        o.term = 2s;
        electors.push_back(std::make_unique<redcoord::leader_elector>(pool, "watch-demo", o));
        auto& e = *electors.back();
        // Each elector delivers its callbacks in order, on the runtime's callback thread.
        slots.push_back(e.on_elected([&, id = o.identity](std::uint64_t epoch) {
            say(id, "elected epoch " + std::to_string(epoch));
        }));
        slots.push_back(e.on_revoked([&, id = o.identity](redcoord::revoke_reason r) {
            say(id, "revoked (" + std::string(redcoord::to_string(r)) + ")");
        }));
        slots.push_back(e.on_leader_changed([&, id = o.identity](std::optional<std::string> who) {
            say(id, "sees leader " + who.value_or("<none>"));
        }));
        e.start();
    }

    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(resign_every_ms > 0 ? std::chrono::milliseconds(resign_every_ms)
                                                        : 100ms);
        if (resign_every_ms == 0) continue;
        for (auto& e : electors)
            if (e->is_leader()) {
                e->resign();
                break;
            }
    }
    for (auto& e : electors) e->stop();  // stop before `say` and `out` go away
    return 0;
}
