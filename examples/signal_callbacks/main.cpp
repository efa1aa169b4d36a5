// signal_callbacks: Boost.Signals2 slots on Redis channels, over a master and its replica.
//
//   example_signal_callbacks                  # starts its own master + replica
//   example_signal_callbacks --redis redis://master:6379 --redis redis://replica:6380
//
// Every slot runs on the hub's callback thread in arrival order. Each signal reaches the
// hub over both links but runs each slot once (envelope ids). A throwing slot is reported
// and the others keep running. Try `redis-cli PUBLISH orders.new hello` meanwhile: plain
// messages have no id, so they run once per link.
#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/signaling/signal_hub.hpp>
#include <redcoord/testing/local_server.hpp>

#include <CLI/CLI.hpp>

#include <atomic>
#include <cstdio>
#include <thread>

using namespace std::chrono_literals;

int main(int argc, char** argv) {
    CLI::App app{"Callback subscriptions on Redis pub/sub"};
    std::vector<std::string> redis;
    int seconds = 5;
    app.add_option("--redis", redis,
                   "Master URL, then replica URLs; none: start a local master and replica");
    app.add_option("--seconds", seconds, "How long to publish")->check(CLI::PositiveNumber);
    CLI11_PARSE(app, argc, argv);

    try {
        // Servers: given, or our own master + replica.
        std::unique_ptr<redcoord::testing::local_server> master, replica;
        if (redis.empty()) {
            master = std::make_unique<redcoord::testing::local_server>();
            replica = redcoord::testing::local_server::replica_of(*master);
            redis = {master->url(), replica->url()};
        }
        std::vector<redcoord::endpoint> replicas;
        for (std::size_t i = 1; i < redis.size(); ++i)
            replicas.push_back(redcoord::parse_endpoint(redis[i]));
        redcoord::connection_pool pool(redcoord::parse_endpoint(redis.front()));

        std::atomic<int> slot_errors{0};
        redcoord::signal_options opts;
        opts.on_slot_error = [&](const redcoord::signal& s, std::exception_ptr e) {
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& ex) {
                std::printf("slot failed on %s: %s\n", s.channel.c_str(), ex.what());
            }
            ++slot_errors;
        };
        redcoord::signal_hub hub(pool, replicas, opts);

        std::atomic<int> orders{0}, any_order{0};
        // Scoped connections: the slot is disconnected (and the channel unsubscribed) when they go.
        auto on_orders = hub.on("orders", [&](const redcoord::signal& s) {
            ++orders;
            std::printf("orders: %s\n", s.payload.c_str());
        });
        auto on_any = hub.on_pattern("orders*", [&](const redcoord::signal& s) {
            ++any_order;
            if (s.payload == "poison") throw std::runtime_error("cannot handle poison");
        });

        // Publish for a while: one order every 100 ms on "orders", and one poison pill.
        int sent = 0;
        const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
        while (std::chrono::steady_clock::now() < end) {
            hub.broadcast("orders", "order " + std::to_string(++sent));
            std::this_thread::sleep_for(100ms);
        }
        hub.broadcast("orders.poison", "poison");
        // Let the callback thread catch up (bounded, for a loaded machine).
        for (int i = 0; i < 500 && any_order.load() < sent + 1; ++i)
            std::this_thread::sleep_for(10ms);
        std::this_thread::sleep_for(100ms);  // a duplicate, if any, would run by now

        auto st = hub.stats();
        std::printf(
            "sent %d; 'orders' slot ran %d times, 'orders*' slot %d times, %d slot error(s); "
            "%llu second copies dropped\n",
            sent, orders.load(), any_order.load(), slot_errors.load(),
            static_cast<unsigned long long>(st.duplicates));
        const bool ok =
            orders.load() == sent && any_order.load() == sent + 1 && slot_errors.load() == 1;
        std::printf(ok ? "signal_callbacks: ok\n" : "signal_callbacks: unexpected counts\n");
        return ok ? 0 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "signal_callbacks: %s\n", e.what());
        return 1;
    }
}
