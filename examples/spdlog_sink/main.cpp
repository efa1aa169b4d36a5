// redcoord's log records through spdlog, and its metrics on /metrics.
//
//   example_spdlog_sink [--redis redis://host:port] [--serve-seconds 0]
//
// Installs an spdlog adapter and a metrics registry on the process's runtime, serves the
// registry on a loopback port, then makes a few events happen: an elector gains and gives up
// leadership, and a watchdog-kept lock is lost because its key is deleted behind its back.
// Prints the log lines as spdlog formats them, then one scrape of /metrics.
// Without --redis it starts its own redis-server.

#include <redcoord/core/log.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/election/leader_elector.hpp>
#include <redcoord/http/metrics_server.hpp>
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/testing/server_or_url.hpp>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <iostream>
#include <thread>

using namespace std::chrono_literals;

// The adapter: redcoord's level, component, message and fields onto an spdlog logger. spdlog
// loggers are thread-safe (the _mt sinks), as log_sink::write() must be.
class spdlog_sink : public redcoord::log_sink {
public:
    explicit spdlog_sink(std::shared_ptr<spdlog::logger> logger) : logger_(std::move(logger)) {}

    void write(const redcoord::log_record& r) override {
        logger_->log(level(r.level), "[{}] {}{}", r.component, r.message,
                     redcoord::format_fields(r.fields));
    }

private:
    static spdlog::level::level_enum level(redcoord::log_level l) {
        switch (l) {
            case redcoord::log_level::debug: return spdlog::level::debug;
            case redcoord::log_level::info: return spdlog::level::info;
            case redcoord::log_level::warning: return spdlog::level::warn;
            case redcoord::log_level::error: return spdlog::level::err;
        }
        return spdlog::level::info;
    }
    std::shared_ptr<spdlog::logger> logger_;
};

int main(int argc, char** argv) {
    CLI::App app{"redcoord's log records through spdlog, and /metrics"};
    std::string url;
    int serve_seconds = 0;
    app.add_option("--redis", url, "Redis URL (default: a redis-server of its own)");
    app.add_option("--serve-seconds", serve_seconds, "keep serving /metrics this long at the end")
        ->check(CLI::Range(0, 3600));
    CLI11_PARSE(app, argc, argv);

    const redcoord::testing::server_or_url redis(url);  // a local server without --redis
    const redcoord::endpoint& ep = redis.endpoint();

    // Both before the first pool: objects resolve their metric series when constructed.
    auto rt = redcoord::runtime::shared();
    rt->set_log_sink(std::make_shared<spdlog_sink>(spdlog::stdout_logger_mt("redcoord")));
    auto registry = std::make_shared<redcoord::metrics_registry>();
    rt->set_metrics(registry);
    redcoord::metrics_server server(registry);  // 127.0.0.1, a free port
    std::cout << "metrics at " << server.url() << std::endl;

    redcoord::connection_pool pool(ep);
    {
        redcoord::election_options o;
        o.identity = "example-1";
        o.term = 2s;
        redcoord::leader_elector e(pool, "spdlog-example", o);
        e.start();
        for (int i = 0; i < 100 && !e.is_leader(); ++i) std::this_thread::sleep_for(20ms);
        e.resign();
    }
    {
        redcoord::lock_options o;
        o.timing.ttl = 600ms;
        o.watchdog = true;
        redcoord::distributed_lock lock(pool, "spdlog-example", o);
        auto lost = lock.on_lost([](const std::string&) {});
        if (!lock.acquire(1s)) return 1;
        pool.command(
            {"DEL", lock.key()});  // behind the holder's back: its next extension is refused
        for (int i = 0; i < 100 && !lock.lost(); ++i) std::this_thread::sleep_for(20ms);
    }
    // lost() turns true at once; the record and the count the I/O thread made reach the sink
    // and the registry a moment later, through the callback executor (record first).
    const std::string counted = "redcoord_lock_lost_total{kind=\"lock\",name=\"spdlog-example\"} 1";
    for (int i = 0; i < 100 && registry->prometheus_text().find(counted) == std::string::npos; ++i)
        std::this_thread::sleep_for(20ms);
    std::cout << registry->prometheus_text() << std::flush;
    std::this_thread::sleep_for(std::chrono::seconds(serve_seconds));
    return 0;
}
