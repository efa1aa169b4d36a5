// A work-queue consumer: N threads take jobs from a reliable queue, ack what they finish and
// requeue what fails; Ctrl-C (SIGINT) or SIGTERM drains gracefully (jobs in progress finish
// and are acked, nothing new is taken). A consumer killed hard loses nothing either: its
// jobs return to the queue once its heartbeat expires.
//
//   queue_worker --redis redis://127.0.0.1:6379 --queue jobs --threads 4
//   queue_worker --produce 100 --seconds 10 --until-empty     # stand-alone demo
//
// Without --redis it starts its own redis-server on a free port.

#include <redcoord/queue/queue_worker.hpp>
#include <redcoord/testing/local_server.hpp>

#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>
#include <memory>
#include <thread>

namespace {
volatile std::sig_atomic_t stop_requested = 0;
void on_signal(int) { stop_requested = 1; }
}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"redcoord reliable-queue worker"};
    std::vector<std::string> urls;
    std::string queue_name = "jobs";
    std::size_t threads = 2;
    int produce = 0;
    int seconds = 0;
    bool until_empty = false;
    app.add_option("--redis", urls,
                   "Redis URL (repeatable; the first is used). Default: start a local server");
    app.add_option("--queue", queue_name, "Queue name");
    app.add_option("--threads", threads, "Worker threads")->check(CLI::Range(1, 256));
    app.add_option("--produce", produce, "Push this many demo jobs first (every 10th fails once)");
    app.add_option("--seconds", seconds,
                   "Stop after this many seconds (0: run until SIGINT/SIGTERM)");
    app.add_flag("--until-empty", until_empty,
                 "Stop once the queue is empty and nothing is in flight");
    CLI11_PARSE(app, argc, argv);

    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);

    try {
        std::unique_ptr<redcoord::testing::local_server> local;
        redcoord::endpoint ep;
        if (urls.empty()) {
            local = std::make_unique<redcoord::testing::local_server>();
            ep = local->endpoint();
            std::printf("started redis-server at %s\n", local->url().c_str());
        } else {
            ep = redcoord::parse_endpoint(urls.front());
        }
        // One connection per worker thread, plus the heartbeat thread and the producer.
        redcoord::connection_pool pool(ep, {.max_size = threads + 2});
        redcoord::reliable_queue queue(pool, queue_name,
                                       {.visibility_timeout = std::chrono::seconds(10),
                                        .heartbeat_interval = std::chrono::seconds(2),
                                        .recover_interval = std::chrono::seconds(5)});

        std::vector<std::string> jobs;
        for (int i = 0; i < produce; ++i) jobs.push_back("job-" + std::to_string(i));
        queue.push_batch(jobs);  // one round trip

        redcoord::queue_worker worker(
            queue,
            [](const redcoord::delivery& d) {
                std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the "work"
                // Demo failure: every 10th job fails on its first attempt and is retried.
                bool fails = d.attempts == 0 && d.payload.size() > 4 && d.payload.back() == '0';
                return fails ? redcoord::handler_result::requeue : redcoord::handler_result::ack;
            },
            {.threads = threads});
        worker.start();
        std::printf("consumer %s working on queue '%s' with %zu threads\n",
                    queue.consumer_id().c_str(), queue_name.c_str(), threads);

        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
        while (!stop_requested) {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            if (seconds > 0 && std::chrono::steady_clock::now() >= deadline) break;
            if (until_empty) {
                auto st = queue.stats();
                std::size_t in_flight = 0;
                for (auto& [consumer, n] : st.in_flight) in_flight += n;
                if (st.ready == 0 && in_flight == 0) break;
            }
        }
        worker.stop();  // graceful drain
        auto s = worker.stats();
        auto st = queue.stats();
        std::printf("stopped: %llu acked, %llu retried, %zu still queued, %zu dead letters\n",
                    static_cast<unsigned long long>(s.acked),
                    static_cast<unsigned long long>(s.requeued), st.ready, st.dead);
        // In the bounded demo every produced job must have been done.
        if (until_empty && produce > 0 && s.acked != static_cast<unsigned long long>(produce))
            return 1;
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "queue_worker: %s\n", e.what());
        return 1;
    }
}
