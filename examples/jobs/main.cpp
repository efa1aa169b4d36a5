// Jobs in one program: a delayed job, a job that fails twice and succeeds on its third attempt
// (exponential back-off), and a repeatable job every 500 ms added by the elected scheduler.
// Events (completed, failed) are printed as they arrive.
//
//   jobs_example --redis redis://127.0.0.1:6379 --seconds 3
//
// Without --redis it starts its own redis-server on a free port.

#include <redcoord/jobs/job_events.hpp>
#include <redcoord/jobs/job_queue.hpp>
#include <redcoord/jobs/job_scheduler.hpp>
#include <redcoord/jobs/job_worker.hpp>
#include <redcoord/testing/local_server.hpp>

#include <CLI/CLI.hpp>

#include <atomic>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <thread>

using namespace std::chrono_literals;

int main(int argc, char** argv) {
    CLI::App app{"redcoord jobs: delayed, retried and repeatable jobs"};
    std::string url;
    int seconds = 3;
    app.add_option("--redis", url, "Redis URL. Default: start a local server");
    app.add_option("--seconds", seconds, "Run this long")->check(CLI::Range(1, 3600));
    CLI11_PARSE(app, argc, argv);
    try {
        std::unique_ptr<redcoord::testing::local_server> local;
        if (url.empty()) {
            local = std::make_unique<redcoord::testing::local_server>();
            url = local->url();
        }
        redcoord::connection_pool pool(redcoord::parse_endpoint(url));
        redcoord::job_queue queue(pool, "example-jobs");

        // Events: exactly once per slot, on the hub's callback thread.
        redcoord::signal_hub hub(pool);
        redcoord::job_events events(queue, hub);
        auto printing = events.on([](const redcoord::job_event& e) {
            if (e.kind == redcoord::job_event_kind::completed)
                std::printf("event: %s completed\n", e.id.c_str());
            else if (e.kind == redcoord::job_event_kind::failed)
                std::printf("event: %s failed: %s\n", e.id.c_str(), e.data.c_str());
        });

        std::atomic<int> flaky_runs{0}, ticks{0};
        redcoord::job_worker worker(queue,
                                    [&](redcoord::job_context& job) -> std::string {
                                        if (job.payload() == "flaky" && ++flaky_runs < 3)
                                            throw std::runtime_error("attempt " +
                                                                     std::to_string(job.attempt()) +
                                                                     " failed");
                                        if (job.payload() == "tick") ++ticks;
                                        return "done: " + job.payload();
                                    },
                                    {.threads = 2});
        worker.start();

        // A delayed job: due in 300 ms.
        const auto later = queue.add("report", {.id = "nightly-report", .delay = 300ms});
        // A retried job: two failures, back-off 100 ms then 200 ms, success on attempt 3.
        redcoord::job_options retried;
        retried.max_attempts = 5;
        retried.backoff = redcoord::backoff_policy::exponential(100ms, 1s);
        const auto flaky = queue.add("flaky", retried);
        // A repeatable job: every 500 ms (or, say, cron "*/5 * * * *" in "Europe/Berlin").
        redcoord::repeat_options every;
        every.every = 500ms;
        queue.repeat("heartbeat", "tick", every);
        redcoord::job_scheduler scheduler(queue);
        scheduler.start();

        std::this_thread::sleep_for(std::chrono::seconds(seconds));
        scheduler.stop();
        worker.stop();
        const auto r = queue.get(later.id);
        const auto f = queue.get(flaky.id);
        std::printf("%s: %s, %s\n", later.id.c_str(), std::string(to_string(r->state)).c_str(),
                    r->result.value_or("-").c_str());
        std::printf("%s: %s after %u attempts, %s\n", flaky.id.c_str(),
                    std::string(to_string(f->state)).c_str(), f->attempts,
                    f->result.value_or("-").c_str());
        std::printf("repeat ticks run: %d\n", ticks.load());
        const bool ok = r->state == redcoord::job_state::completed &&
                        f->state == redcoord::job_state::completed && f->attempts == 3 &&
                        ticks.load() >= seconds;
        return ok ? 0 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "jobs_example: %s\n", e.what());
        return 1;
    }
}
