// A leader-only scheduled task: several candidates campaign, and only the leader's task ticks.
// Each tick carries the epoch, the fencing token a real job would hand to the systems it writes.
//
//   example_leader_task [--redis redis://host:port] [--candidates 2] [--seconds 5]
//
// Without --redis it starts its own redis-server. Halfway through, the leader resigns, so the
// ticks move to another candidate under a higher epoch.

#include <redcoord/election/leader_task.hpp>
#include <redcoord/testing/server_or_url.hpp>

#include <CLI/CLI.hpp>

#include <atomic>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

int main(int argc, char** argv) {
    CLI::App app{"leader-only scheduled task"};
    std::vector<std::string> urls;
    int candidates = 2;
    int seconds = 5;
    app.add_option("--redis", urls, "Redis URL (repeatable; the election uses the first)");
    app.add_option("--candidates", candidates, "candidates in this process")
        ->check(CLI::Range(1, 16));
    app.add_option("--seconds", seconds, "run time in seconds")->check(CLI::Range(1, 3600));
    CLI11_PARSE(app, argc, argv);

    const redcoord::testing::server_or_url redis(
        urls.empty() ? std::string() : urls.front());  // a local server without --redis
    const redcoord::endpoint& ep = redis.endpoint();
    redcoord::connection_pool pool(ep);

    std::mutex out;
    std::atomic<int> ticks{0};
    std::vector<std::unique_ptr<redcoord::leader_elector>> electors;
    std::vector<std::unique_ptr<redcoord::leader_task>> tasks;
    for (int i = 0; i < candidates; ++i) {
        redcoord::election_options o;
        o.identity = "worker-" + std::to_string(i);
        o.term = 1500ms;  // short for a demo; the default is 20 s
        electors.push_back(std::make_unique<redcoord::leader_elector>(pool, "nightly-report", o));
        auto& e = *electors.back();
        // The work runs only while `e` leads; `stop` fires if leadership is revoked mid-run.
        tasks.push_back(std::make_unique<redcoord::leader_task>(
            e, 200ms, [&, i](std::uint64_t epoch, std::stop_token stop) {
                if (stop.stop_requested()) return;
                std::lock_guard g(out);
                std::cout << "tick " << ++ticks << " by worker-" << i << " epoch " << epoch
                          << std::endl;
            }));
        e.start();
    }

    std::this_thread::sleep_for(std::chrono::milliseconds(seconds * 500));
    for (auto& e : electors)
        if (e->is_leader()) {
            std::lock_guard g(out);
            std::cout << e->identity() << " resigns" << std::endl;
            e->resign();
            break;
        }
    std::this_thread::sleep_for(std::chrono::milliseconds(seconds * 500));
    tasks.clear();     // stop the tasks first: they use the electors
    electors.clear();  // each resigns if leading
    std::cout << ticks << " ticks" << std::endl;
    return 0;
}
